package fakeprovider

import (
	"encoding/json"
	"strings"
)

// OpenAI Responses: https://platform.openai.com/docs/api-reference/responses

// responseItem is one output item: a reasoning item (thinking), a message
// (consecutive texts) or a function call.
type responseItem struct {
	kind partKind
	text string
	part Part
}

func responseItems(parts []Part) []responseItem {
	var items []responseItem
	for _, p := range parts {
		if p.kind == textPart && len(items) > 0 && items[len(items)-1].kind == textPart {
			items[len(items)-1].text += p.text
			continue
		}
		items = append(items, responseItem{kind: p.kind, text: p.text, part: p})
	}
	return items
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type summaryText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// item renders output item i; done says whether it is complete (else as
// response.output_item.added shows it).
func (r *reply) item(i int, it responseItem, done bool) any {
	id := r.itemIDs[i]
	status := "completed"
	if !done {
		status = "in_progress"
	}
	switch it.kind {
	case thinkingPart:
		v := struct {
			ID               string        `json:"id"`
			Type             string        `json:"type"`
			Summary          []summaryText `json:"summary"`
			EncryptedContent *string       `json:"encrypted_content,omitempty"`
		}{ID: id, Type: "reasoning", Summary: []summaryText{}}
		if done {
			v.Summary = []summaryText{{"summary_text", it.text}}
			v.EncryptedContent = &it.part.signature
		}
		return v
	case textPart:
		v := struct {
			ID      string       `json:"id"`
			Type    string       `json:"type"`
			Status  string       `json:"status"`
			Content []outputText `json:"content"`
			Role    string       `json:"role"`
		}{id, "message", status, []outputText{}, "assistant"}
		if done {
			v.Content = []outputText{{"output_text", it.text, []any{}, []any{}}}
		}
		return v
	}
	args := ""
	if done {
		args = it.part.args
	}
	return struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
	}{id, "function_call", status, args, it.part.id, it.part.name}
}

func (r *reply) responseOutput() []any {
	out := []any{}
	for i, it := range responseItems(r.parts) {
		out = append(out, r.item(i, it, true))
	}
	return out
}

// response is the response object with status and output.
func (r *reply) response(status string, output []any) any {
	var req struct {
		Instructions       json.RawMessage `json:"instructions"`
		PreviousResponseID json.RawMessage `json:"previous_response_id"`
		Store              json.RawMessage `json:"store"`
		Tools              json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(r.body, &req)
	orNull := func(m json.RawMessage, def string) json.RawMessage {
		if len(m) == 0 {
			return json.RawMessage(def)
		}
		return m
	}
	type usage struct {
		InputTokens         int            `json:"input_tokens"`
		InputTokensDetails  map[string]int `json:"input_tokens_details"`
		OutputTokens        int            `json:"output_tokens"`
		OutputTokensDetails map[string]int `json:"output_tokens_details"`
		TotalTokens         int            `json:"total_tokens"`
	}
	var u *usage
	if status == "completed" {
		u = &usage{r.in, map[string]int{"cached_tokens": 0}, r.out, map[string]int{"reasoning_tokens": 0}, r.in + r.out}
	}
	return struct {
		ID                 string          `json:"id"`
		Object             string          `json:"object"`
		CreatedAt          int             `json:"created_at"`
		Status             string          `json:"status"`
		Background         bool            `json:"background"`
		Error              any             `json:"error"`
		IncompleteDetails  any             `json:"incomplete_details"`
		Instructions       json.RawMessage `json:"instructions"`
		MaxOutputTokens    any             `json:"max_output_tokens"`
		Model              string          `json:"model"`
		Output             []any           `json:"output"`
		ParallelToolCalls  bool            `json:"parallel_tool_calls"`
		PreviousResponseID json.RawMessage `json:"previous_response_id"`
		Store              json.RawMessage `json:"store"`
		Temperature        float64         `json:"temperature"`
		Text               any             `json:"text"`
		ToolChoice         string          `json:"tool_choice"`
		Tools              json.RawMessage `json:"tools"`
		TopP               float64         `json:"top_p"`
		Truncation         string          `json:"truncation"`
		Usage              *usage          `json:"usage"`
		User               any             `json:"user"`
		Metadata           map[string]any  `json:"metadata"`
	}{
		ID: r.id, Object: "response", CreatedAt: Created, Status: status,
		Instructions: orNull(req.Instructions, "null"), Model: r.model, Output: output,
		ParallelToolCalls: true, PreviousResponseID: orNull(req.PreviousResponseID, "null"),
		Store: orNull(req.Store, "true"), Temperature: 1, Text: map[string]any{"format": map[string]string{"type": "text"}},
		ToolChoice: "auto", Tools: orNull(req.Tools, "[]"), TopP: 1, Truncation: "disabled", Usage: u,
		Metadata: map[string]any{},
	}
}

// responsesStream writes the typed events of a streamed response, each
// with its event line and a sequence_number.
func (r *reply) responsesStream(s *sse) {
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.event(typ, marshalOrdered(typ, fields))
	}
	send("response.created", map[string]any{"response": r.response("in_progress", []any{})})
	send("response.in_progress", map[string]any{"response": r.response("in_progress", []any{})})
	for i, it := range responseItems(r.parts) {
		id := r.itemIDs[i]
		send("response.output_item.added", map[string]any{"output_index": i, "item": r.item(i, it, false)})
		switch it.kind {
		case thinkingPart:
			send("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "part": summaryText{"summary_text", ""}})
			for _, f := range fragments(it.text) {
				send("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "delta": f})
			}
			send("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "text": it.text})
			send("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "part": summaryText{"summary_text", it.text}})
		case textPart:
			send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": outputText{"output_text", "", []any{}, []any{}}})
			for _, f := range fragments(it.text) {
				send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": f, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": it.text, "logprobs": []any{}})
			send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": outputText{"output_text", it.text, []any{}, []any{}}})
		case callPart:
			for _, f := range fragments(it.part.args) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": f})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": it.part.args})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": r.item(i, it, true)})
	}
	send("response.completed", map[string]any{"response": r.response("completed", r.responseOutput())})
}

// eventKeyOrder is the order of an event's keys on the wire: type first,
// as OpenAI sends them, sequence_number last.
var eventKeyOrder = []string{"type", "response", "item_id", "output_index", "content_index", "summary_index", "item", "part", "delta", "text", "arguments", "logprobs", "sequence_number"}

// marshalOrdered encodes fields in eventKeyOrder.
func marshalOrdered(typ string, fields map[string]any) []byte {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, k := range eventKeyOrder {
		v, ok := fields[k]
		if !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(marshal(k))
		b.WriteByte(':')
		b.Write(marshal(v))
	}
	if n != len(fields) {
		panic("fakeprovider: event " + typ + " has a key outside eventKeyOrder")
	}
	b.WriteByte('}')
	return []byte(b.String())
}
