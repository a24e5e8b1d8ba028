package fakeprovider

import (
	"encoding/json"
	"net/http"
	"net/url"
)

// Gemini: https://ai.google.dev/api/generate-content

type geminiCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiPart struct {
	Text             *string     `json:"text,omitempty"`
	Thought          bool        `json:"thought,omitempty"`
	FunctionCall     *geminiCall `json:"functionCall,omitempty"`
	ThoughtSignature string      `json:"thoughtSignature,omitempty"`
}

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

type geminiCandidate struct {
	Content struct {
		Parts []geminiPart `json:"parts"`
		Role  string       `json:"role"`
	} `json:"content"`
	FinishReason string `json:"finishReason,omitempty"`
	Index        int    `json:"index"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

// geminiParts renders p; a call's arguments always whole, as Gemini sends.
func geminiParts(p Part, text string) geminiPart {
	switch p.kind {
	case thinkingPart:
		return geminiPart{Text: &text, Thought: true}
	case callPart:
		return geminiPart{FunctionCall: &geminiCall{p.id, p.name, argsObject(p.args)}, ThoughtSignature: p.signature}
	}
	return geminiPart{Text: &text}
}

func (r *reply) geminiChunk(parts []geminiPart, final bool) []byte {
	c := geminiCandidate{}
	c.Content.Role = "model"
	c.Content.Parts = parts
	u := geminiUsage{PromptTokenCount: r.in, TotalTokenCount: r.in}
	if final {
		c.FinishReason = "STOP"
		u = geminiUsage{r.in, r.out, r.in + r.out}
	}
	return marshal(geminiResponse{[]geminiCandidate{c}, u, r.model, r.id})
}

// geminiJSON is the GenerateContentResponse.
func (r *reply) geminiJSON() []byte {
	parts := []geminiPart{}
	for _, p := range r.parts {
		gp := geminiParts(p, p.text)
		if p.kind == thinkingPart {
			gp.ThoughtSignature = p.signature
		}
		parts = append(parts, gp)
	}
	return r.geminiChunk(parts, true)
}

// geminiStream writes one data-only event per chunk, lines ending in
// \r\n as Gemini's do: text and thoughts in fragments (a thought's
// signature on its last fragment), each call whole in its own chunk, the
// last chunk with finishReason and the full usageMetadata.
func (r *reply) geminiStream(s *sse) {
	for _, c := range r.geminiChunks() {
		s.event("", c)
	}
}

// geminiArrayStream writes the chunks of geminiStream as the elements of
// one JSON array, flushing each.
func (r *reply) geminiArrayStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for i, c := range r.geminiChunks() {
		sep := ",\r\n"
		if i == 0 {
			sep = "["
		}
		w.Write(append([]byte(sep), c...))
		if f != nil {
			f.Flush()
		}
	}
	w.Write([]byte("]"))
}

// geminiChunks are the chunks of a streamed reply.
func (r *reply) geminiChunks() [][]byte {
	var chunks [][]geminiPart
	for _, p := range r.parts {
		if p.kind == callPart {
			chunks = append(chunks, []geminiPart{geminiParts(p, "")})
			continue
		}
		fs := fragments(p.text)
		if len(fs) == 0 {
			fs = []string{""}
		}
		for i, f := range fs {
			gp := geminiParts(p, f)
			if p.kind == thinkingPart && i == len(fs)-1 {
				gp.ThoughtSignature = p.signature
			}
			chunks = append(chunks, []geminiPart{gp})
		}
	}
	if len(chunks) == 0 {
		empty := ""
		chunks = [][]geminiPart{{{Text: &empty}}}
	}
	out := make([][]byte, len(chunks))
	for i, c := range chunks {
		out[i] = r.geminiChunk(c, i == len(chunks)-1)
	}
	return out
}

// sseQuery reports whether a raw query asks for server-sent events (alt=sse).
func sseQuery(raw string) bool {
	q, _ := url.ParseQuery(raw)
	return q.Get("alt") == "sse"
}
