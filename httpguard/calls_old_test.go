package httpguard

import (
	"errors"
	"fmt"
	"strings"
)

// Each protocol's sync calls reader as it was before the span walker was
// made fast (62e5283), over the old walker (jsonspan_old_test.go): the
// oracle the new readers are held to (TestCallsAsBefore, FuzzCallsAsBefore).

// OpenAI Chat Completions.

func oldChatCalls(resp []byte) ([]wireCall, error) {
	out, err := oldChatCallsRead(resp)
	return out, chatAsUnguardable(chatUnguardable, err)
}

func oldChatMessage(b []byte) (sp span, ok bool, err error) {
	r, err := oldParseBody(b)
	if err != nil {
		return span{}, false, err
	}
	ch, ok, err := oldField(b, r, "choices")
	if err != nil || !ok || kind(b, ch) == 'n' {
		return span{}, false, err
	}
	es, err := oldArrayElems(b, ch)
	if err != nil || len(es) == 0 {
		return span{}, false, err
	}
	if len(es) == 1 {
		return oldAt(b, es[0], "message")
	}
	for i, e := range es {
		if kind(b, e) != '{' {
			continue
		}
		m, ok, err := oldField(b, e, "message")
		if err != nil {
			return span{}, false, err
		}
		if !ok || kind(b, m) != '{' {
			continue
		}
		if calls, err := oldChatHoldsCalls(b, m); err != nil {
			return span{}, false, err
		} else if calls {
			return span{}, false, unguardable("several choices with tool calls", fmt.Errorf("choice %d of %d holds tool calls", i, len(es)))
		}
	}
	return span{}, false, nil
}

func oldChatHoldsCalls(b []byte, msg span) (bool, error) {
	if fc, ok, err := oldField(b, msg, "function_call"); err != nil || (ok && kind(b, fc) != 'n') {
		return ok, err
	}
	tc, ok, err := oldField(b, msg, "tool_calls")
	if err != nil || !ok || kind(b, tc) != '[' {
		return ok && kind(b, tc) != 'n', err
	}
	es, err := oldArrayElems(b, tc)
	return len(es) > 0, err
}

func oldChatToolCalls(b []byte, msg span) ([]chatCall, error) {
	if fc, ok, err := oldField(b, msg, "function_call"); err != nil {
		return nil, err
	} else if ok && kind(b, fc) != 'n' {
		return nil, unguardable("legacy function_call", errors.New("message.function_call"))
	}
	tc, ok, err := oldField(b, msg, "tool_calls")
	if err != nil || !ok || kind(b, tc) == 'n' {
		return nil, err
	}
	es, err := oldArrayElems(b, tc)
	if err != nil {
		return nil, err
	}
	out := make([]chatCall, len(es))
	for i, e := range es {
		if kind(b, e) != '{' {
			return nil, fmt.Errorf("%w: tool call %d is not an object", errJSON, i)
		}
		typ, err := oldOptStr(b, e, "type")
		if err != nil {
			return nil, err
		}
		switch typ {
		case "function", "":
		case "custom":
			out[i].custom = true
		default:
			return nil, unguardable("tool call of an unknown type", fmt.Errorf("tool call %d of type %q", i, typ))
		}
		out[i].sp = e
	}
	return out, nil
}

func oldChatFunctionCalls(b []byte) ([]span, error) {
	msg, ok, err := oldChatMessage(b)
	if err != nil || !ok {
		return nil, err
	}
	tcs, err := oldChatToolCalls(b, msg)
	if err != nil {
		return nil, err
	}
	var out []span
	for _, c := range tcs {
		if !c.custom {
			out = append(out, c.sp)
		}
	}
	return out, nil
}

func oldChatCallsRead(resp []byte) ([]wireCall, error) {
	tcs, err := oldChatFunctionCalls(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(tcs))
	for _, tc := range tcs {
		id, err := oldOptStr(resp, tc, "id")
		if err != nil {
			return nil, err
		}
		fn, ok, err := oldField(resp, tc, "function")
		if err != nil {
			return nil, err
		}
		if !ok || kind(resp, fn) != '{' {
			return nil, fmt.Errorf("%w: tool call without function", errJSON)
		}
		name, err := oldOptStr(resp, fn, "name")
		if err != nil {
			return nil, err
		}
		args, err := oldOptStr(resp, fn, "arguments")
		if err != nil {
			return nil, err
		}
		out = append(out, wireCall{ID: id, Name: name, Args: []byte(args)})
	}
	return out, nil
}

// The other protocols, as above.

// responses.go, before.
func oldResponsesOutput(b []byte) (items []span, calls []int, kinds []itemKind, err error) {
	r, err := oldParseBody(b)
	if err != nil {
		return nil, nil, nil, unguardable("a response that is not a JSON object", err)
	}
	o, ok, err := oldField(b, r, "output")
	if err != nil {
		return nil, nil, nil, unguardable("a response whose output cannot be read", err)
	}
	if !ok || kind(b, o) == 'n' {
		return nil, nil, nil, nil
	}
	if items, err = oldArrayElems(b, o); err != nil {
		return nil, nil, nil, unguardable("a response whose output cannot be read", err)
	}
	kinds = make([]itemKind, len(items))
	for i, it := range items {
		typ, err := oldOptStr(b, it, "type")
		if err != nil {
			return nil, nil, nil, unguardable("an output item whose type cannot be read", err)
		}
		k := responsesItemKind(typ)
		if k == 0 {
			return nil, nil, nil, unguardable("an output item of a type the guard does not know", fmt.Errorf("type %q", typ))
		}
		if typ == "tool_search_call" {
			if k, err = oldToolSearchKind(b, it); err != nil {
				return nil, nil, nil, err
			}
		}
		kinds[i] = k
		if k == itemFunction {
			calls = append(calls, i)
		}
	}
	return items, calls, kinds, nil
}

func oldToolSearchKind(b []byte, it span) (itemKind, error) {
	exec, err := oldOptStr(b, it, "execution")
	switch {
	case err != nil:
		return 0, unguardable("a tool search call that cannot be read", err)
	case exec == "server":
		return itemPassed, nil
	case exec == "client":
		return itemLeftOut, nil
	}
	return 0, unguardable("a tool search call whose execution the guard does not know", fmt.Errorf("execution %.64q", exec))
}

func oldResponsesCalls(resp []byte) ([]wireCall, error) {
	items, calls, _, err := oldResponsesOutput(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(calls))
	for _, c := range calls {
		it := items[c]
		id, err := oldOptStr(resp, it, "call_id")
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		name, err := oldOptStr(resp, it, "name")
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		args, err := oldOptStr(resp, it, "arguments")
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		ns, err := oldOptStr(resp, it, "namespace")
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		out = append(out, wireCall{ID: id, Name: namespacedName(ns, name), Args: []byte(args)})
	}
	return out, nil
}

// messages.go, before.
func oldMessagesToolUses(b []byte) (blocks []span, uses []int, err error) {
	r, err := oldParseBody(b)
	if err != nil {
		return nil, nil, err
	}
	c, ok, err := oldField(b, r, "content")
	if err != nil || !ok || kind(b, c) == 'n' {
		return nil, nil, err
	}
	blocks, err = oldArrayElems(b, c)
	if err != nil {
		return nil, nil, err
	}
	for i, bl := range blocks {
		typ, err := oldOptStr(b, bl, "type")
		if err != nil {
			return nil, nil, err
		}
		if err := checkBlockType(typ); err != nil {
			return nil, nil, err
		}
		if typ == "tool_use" {
			uses = append(uses, i)
		}
	}
	return blocks, uses, nil
}

func oldMessagesCalls(resp []byte) ([]wireCall, error) {
	blocks, uses, err := oldMessagesToolUses(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(uses))
	for _, u := range uses {
		bl := blocks[u]
		id, err := oldOptStr(resp, bl, "id")
		if err != nil {
			return nil, err
		}
		name, err := oldOptStr(resp, bl, "name")
		if err != nil {
			return nil, err
		}
		var args []byte
		if in, ok, err := oldField(resp, bl, "input"); err != nil {
			return nil, err
		} else if ok {
			if args, err = oldObjectArgs(resp, in); err != nil {
				return nil, err
			}
		}
		out = append(out, wireCall{ID: id, Name: name, Args: args})
	}
	return out, nil
}

// gemini.go, before.
func oldGeminiParts(b []byte) (content span, parts []span, ok bool, err error) {
	r, err := oldParseBody(b)
	if err != nil {
		return span{}, nil, false, err
	}
	cs, ok, err := oldField(b, r, "candidates")
	if err != nil || !ok || kind(b, cs) == 'n' {
		return span{}, nil, false, err
	}
	es, err := oldArrayElems(b, cs)
	if err != nil || len(es) == 0 {
		return span{}, nil, false, err
	}
	if len(es) > 1 {
		for _, e := range es {
			if calls, err := oldCandidateCalls(b, e); err != nil {
				return span{}, nil, false, err
			} else if calls {
				return span{}, nil, false, unguardable(severalCandidates, fmt.Errorf("%d candidates", len(es)))
			}
		}
	}
	content, ok, err = oldField(b, es[0], "content")
	if err != nil || !ok || kind(b, content) != '{' {
		return span{}, nil, false, err
	}
	ps, ok, err := oldField(b, content, "parts")
	if err != nil || !ok || kind(b, ps) == 'n' {
		return content, nil, true, err
	}
	parts, err = oldArrayElems(b, ps)
	return content, parts, true, err
}

func oldCandidateCalls(b []byte, sp span) (bool, error) {
	if kind(b, sp) != '{' {
		return false, nil
	}
	c, ok, err := oldField(b, sp, "content")
	if err != nil || !ok || kind(b, c) != '{' {
		return false, err
	}
	ps, ok, err := oldField(b, c, "parts")
	if err != nil || !ok || kind(b, ps) != '[' {
		return false, err
	}
	parts, err := oldArrayElems(b, ps)
	if err != nil {
		return false, err
	}
	fcs, err := oldGeminiCalls(b, parts)
	return len(fcs) > 0, err
}

func oldGeminiCalls(b []byte, parts []span) ([]span, error) {
	var out []span
	for _, p := range parts {
		fc, ok, err := oldField(b, p, "functionCall")
		if err != nil {
			return nil, err
		}
		if ok && kind(b, fc) == '{' {
			out = append(out, fc)
		}
	}
	return out, nil
}

func oldGeminiCallsOf(resp []byte) ([]wireCall, error) {
	_, parts, _, err := oldGeminiParts(resp)
	if err != nil {
		return nil, err
	}
	fcs, err := oldGeminiCalls(resp, parts)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(fcs))
	for _, fc := range fcs {
		c, err := oldGeminiCall(resp, fc)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func oldGeminiCall(b []byte, fc span) (wireCall, error) {
	id, err := oldOptStr(b, fc, "id")
	if err != nil {
		return wireCall{}, err
	}
	name, err := oldOptStr(b, fc, "name")
	if err != nil {
		return wireCall{}, err
	}
	var args []byte
	if a, ok, err := oldField(b, fc, "args"); err != nil {
		return wireCall{}, err
	} else if ok {
		if args, err = oldObjectArgs(b, a); err != nil {
			return wireCall{}, err
		}
	}
	return wireCall{ID: id, Name: name, Args: args}, nil
}

// ollama.go, before.
func oldOllamaMessage(b []byte) (sp span, ok bool, err error) {
	r, err := oldParseBody(b)
	if err != nil {
		return span{}, false, err
	}
	m, ok, err := oldField(b, r, "message")
	if err != nil || !ok || kind(b, m) == 'n' {
		return span{}, false, err
	}
	if kind(b, m) != '{' {
		return span{}, false, fmt.Errorf("%w: message is not an object", errJSON)
	}
	return m, true, nil
}

func oldOllamaToolCalls(b []byte, msg span) ([]span, error) {
	tc, ok, err := oldField(b, msg, "tool_calls")
	if err != nil || !ok || kind(b, tc) == 'n' {
		return nil, err
	}
	es, err := oldArrayElems(b, tc)
	if err != nil {
		return nil, err
	}
	for i, e := range es {
		if kind(b, e) != '{' {
			return nil, fmt.Errorf("%w: tool call %d is not an object", errJSON, i)
		}
	}
	return es, nil
}

func oldOllamaFunctions(b []byte) (fns []span, ids []string, err error) {
	msg, ok, err := oldOllamaMessage(b)
	if err != nil || !ok {
		return nil, nil, err
	}
	tcs, err := oldOllamaToolCalls(b, msg)
	if err != nil {
		return nil, nil, err
	}
	for i, tc := range tcs {
		id, err := oldOptStr(b, tc, "id")
		if err != nil {
			return nil, nil, err
		}
		fn, ok, err := oldField(b, tc, "function")
		if err != nil {
			return nil, nil, err
		}
		if !ok || kind(b, fn) != '{' {
			return nil, nil, fmt.Errorf("%w: tool call %d without function", errJSON, i)
		}
		fns, ids = append(fns, fn), append(ids, id)
	}
	return fns, ids, nil
}

func oldOllamaCalls(resp []byte) ([]wireCall, error) {
	fns, ids, err := oldOllamaFunctions(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(fns))
	for i, fn := range fns {
		c, err := oldOllamaFunction(resp, fn)
		if err != nil {
			return nil, err
		}
		c.ID = ids[i]
		out = append(out, c)
	}
	return out, nil
}

func oldOllamaFunction(b []byte, fn span) (wireCall, error) {
	name, err := oldOptStr(b, fn, "name")
	if err != nil {
		return wireCall{}, err
	}
	var args []byte
	if a, ok, err := oldField(b, fn, "arguments"); err != nil {
		return wireCall{}, err
	} else if ok && kind(b, a) != 'n' {
		if args, err = oldObjectArgs(b, a); err != nil {
			return wireCall{}, err
		}
	}
	return wireCall{Name: name, Args: args}, nil
}

// bedrock.go, before.
func oldBedrockContent(resp []byte) (blocks []bedrockBlock, uses []int, err error) {
	r, err := oldParseBody(resp)
	if err != nil {
		return nil, nil, err
	}
	c, ok, err := oldBedrockAt(resp, r, "output", "message", "content")
	if err != nil || !ok || kind(resp, c) == 'n' {
		return nil, nil, err
	}
	es, err := oldArrayElems(resp, c)
	if err != nil {
		return nil, nil, err
	}
	for i, e := range es {
		bl, err := oldBedrockBlockOf(resp, e)
		if err != nil {
			return nil, nil, err
		}
		blocks = append(blocks, bl)
		if bl.kind != "toolUse" {
			continue
		}
		typ, err := oldOptStr(resp, bl.v, "type")
		if err != nil {
			return nil, nil, err
		}
		if typ != "server_tool_use" {
			uses = append(uses, i)
		}
	}
	return blocks, uses, nil
}

func oldBedrockAt(b []byte, sp span, keys ...string) (v span, ok bool, err error) {
	v = sp
	for _, k := range keys {
		if kind(b, v) != '{' {
			return span{}, false, fmt.Errorf("%w: %s of a non-object", errJSON, k)
		}
		if v, ok, err = oldField(b, v, k); err != nil || !ok || kind(b, v) == 'n' {
			return span{}, false, err
		}
	}
	return v, true, nil
}

func oldBedrockBlockOf(b []byte, e span) (bedrockBlock, error) {
	if kind(b, e) != '{' {
		return bedrockBlock{}, fmt.Errorf("%w: content block not an object", errJSON)
	}
	ms, err := oldObjectMembers(b, e)
	if err != nil {
		return bedrockBlock{}, err
	}
	var bl bedrockBlock
	for _, m := range ms {
		if kind(b, m.v) == 'n' {
			continue // an unset member of the union
		}
		if !bedrockBlockKind(m.key) {
			if strings.EqualFold(m.key, "toolUse") {
				return bedrockBlock{}, keyCase(m.key)
			}
			return bedrockBlock{}, unguardable(bedrockUnknownBlock, fmt.Errorf("kind %.64q", m.key))
		}
		if bl.kind != "" {
			return bedrockBlock{}, unguardable(bedrockUnread, fmt.Errorf("a content block of two kinds, %q and %q", bl.kind, m.key))
		}
		bl = bedrockBlock{kind: m.key, v: m.v}
	}
	if bl.kind == "" {
		return bedrockBlock{}, unguardable(bedrockUnread, fmt.Errorf("an empty content block"))
	}
	if bl.kind == "toolUse" && kind(b, bl.v) != '{' {
		return bedrockBlock{}, fmt.Errorf("%w: toolUse not an object", errJSON)
	}
	return bl, nil
}

func oldBedrockCalls(resp []byte) ([]wireCall, error) {
	blocks, uses, err := oldBedrockContent(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(uses))
	for _, u := range uses {
		c, err := oldBedrockCall(resp, blocks[u].v)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func oldBedrockCall(resp []byte, v span) (wireCall, error) {
	id, err := oldOptStr(resp, v, "toolUseId")
	if err != nil {
		return wireCall{}, err
	}
	name, err := oldOptStr(resp, v, "name")
	if err != nil {
		return wireCall{}, err
	}
	var args []byte
	if in, ok, err := oldField(resp, v, "input"); err != nil {
		return wireCall{}, err
	} else if ok {
		if kind(resp, in) == '"' {
			// A stream's input that is not JSON, assembled as its text.
			s, err := oldStr(resp, in)
			if err != nil {
				return wireCall{}, err
			}
			args = []byte(s)
		} else {
			args = raw(resp, in)
		}
	}
	return wireCall{ID: id, Name: name, Args: args}, nil
}

// oldCalls is each protocol's calls before, as its wireProtocol.calls
// wraps its reader.
func oldCalls(proto wireProtocol) func([]byte) ([]wireCall, error) {
	switch proto.(type) {
	case chatWire:
		return oldChatCalls
	case responsesWire:
		return oldResponsesCalls
	case messagesWire:
		return func(b []byte) ([]wireCall, error) {
			out, err := oldMessagesCalls(b)
			return out, unreadable(anthropicUnread, err)
		}
	case geminiWire:
		return func(b []byte) ([]wireCall, error) {
			out, err := oldGeminiCallsOf(b)
			return out, unreadable(geminiUnread, err)
		}
	case ollamaWire:
		return func(b []byte) ([]wireCall, error) {
			out, err := oldOllamaCalls(b)
			return out, unreadable(ollamaUnread, err)
		}
	case bedrockWire:
		return func(b []byte) ([]wireCall, error) {
			out, err := oldBedrockCalls(b)
			return out, unreadable(bedrockUnread, err)
		}
	}
	panic("no old calls for " + proto.name())
}
