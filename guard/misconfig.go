package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/toolguard/toolguard/internal/safetext"
)

// Events that point at a mistake in how the stack is wired rather than at
// something the model did. [LogEvents] logs them at Warn.
const (
	// EventMisconfigured: a middleware's configuration does not fit the
	// requests it sees. [ToolCallLimit] reports it, once per middleware
	// value and mistake, when its [WithToolName] names none of the tools a
	// request offers, so its limits count nothing (Err wraps
	// [ErrToolNotOffered]), and when it is placed inside a
	// [ToolArgValidation], so it counts calls that are rejected (Err wraps
	// [ErrLimitInsideValidation]). Tool is the limiter's WithToolName.
	// [ToolCallLimit] and [ModelCallLimit] report it, once per middleware
	// value, when a thread limit is used with no thread id in the context
	// (Err wraps [ErrNoThread]). [ToolArgValidation] reports it, once per
	// middleware value, when a request offers two tools of one name (Err
	// wraps [ErrDuplicateTool]), and when a request offers a tool whose
	// schema is langchaingo's one-string placeholder, so that nothing
	// typed is validated (Err wraps [ErrStringPlaceholder]).
	EventMisconfigured EventKind = "misconfigured"
	// EventEmptyResponse: [ToolArgValidation] got a response to a request
	// that offers tools with neither a tool call nor any text. The
	// response is returned as is; Err wraps [ErrEmptyResponse]. The usual
	// cause is langchaingo's native ollama client, which sends no tools and
	// drops the tool calls of Ollama's answer: use langchaingo's openai
	// client with Ollama's OpenAI-compatible endpoint (base URL
	// http://localhost:11434/v1) instead.
	EventEmptyResponse EventKind = "empty_response"
)

// ErrToolNotOffered is wrapped by the Err of an [EventMisconfigured] that
// [ToolCallLimit] reports for a [WithToolName] naming no offered tool.
var ErrToolNotOffered = errors.New("guard: the limited tool is not offered")

// ErrNoThread is wrapped by the Err of an [EventMisconfigured] that a
// limiter with [WithThreadLimit] reports for a call whose context names no
// thread ([WithThread]): the thread is then counted from the transcript,
// which any trimming or summarising of the conversation shortens, so the
// limit no longer holds.
var ErrNoThread = errors.New("guard: a thread limit with no thread id in the context")

// ErrDuplicateTool is wrapped by the Err of an [EventMisconfigured] that
// [ToolArgValidation] reports for a request offering two tools with one
// name: the last one's schema is used for both.
var ErrDuplicateTool = errors.New("guard: two tools with one name")

// ErrStringPlaceholder is wrapped by the Err of an [EventMisconfigured]
// that [ToolArgValidation] reports for a tool whose schema is langchaingo's
// one-string placeholder, {"__arg1": string}: langchaingo's
// agents.OpenAIFunctionsAgent offers every tool that way, so the model is
// never shown, and ToolArgValidation never checks, the tool's own
// arguments. Offer the tools' own schemas with package agent/lctool
// (OfferSchemas, with SchemaFor for an existing tools.Tool).
var ErrStringPlaceholder = errors.New("guard: a tool offered with langchaingo's one-string schema")

// ErrEmptyResponse is wrapped by the Err of an [EventEmptyResponse].
var ErrEmptyResponse = errors.New("guard: empty response to a request offering tools")

// wiringChecks are the checks a [ToolCallLimit] value makes of how it is
// wired, each reported once per value.
type wiringChecks struct {
	name      atomic.Bool // reported, or the limited tool was seen among the offered tools
	placement atomic.Bool // reported
	thread    atomic.Bool // reported
}

// checkThread reports, once per limiter value, a thread limit used on a
// call whose context names no thread.
func (w *wiringChecks) checkThread(ctx context.Context, who string, cfg *limitConfig) {
	if cfg.thread == 0 || w.thread.Load() || threadFrom(ctx) != "" || !w.thread.CompareAndSwap(false, true) {
		return
	}
	err := fmt.Errorf("%w: %s's WithThreadLimit(%d) counts the thread from the transcript, "+
		"which trimming or summarising the conversation shortens; name the thread with guard.WithThread(ctx, id)",
		ErrNoThread, who, cfg.thread)
	reportLoud(ctx, cfg.events, Event{Kind: EventMisconfigured, Middleware: who, Tool: cfg.tool, Err: err})
}

func (w *wiringChecks) check(ctx context.Context, l *toolCallLimit, tools func() []Tool) {
	w.checkName(ctx, l, tools)
	w.checkPlacement(ctx, l)
	w.checkThread(ctx, limitName, &l.cfg)
}

// checkName reports a [WithToolName] that names none of the tools a request
// offers. Once a request offers the tool, the name is known to be right and
// nothing more is checked.
func (w *wiringChecks) checkName(ctx context.Context, l *toolCallLimit, offered func() []Tool) {
	if l.cfg.tool == "" || w.name.Load() {
		return
	}
	tools := offered()
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if l.covers(t.Name, "") {
			w.name.Store(true)
			return
		}
		names = append(names, safetext.Quote(t.Name, 80))
	}
	if len(names) == 0 || !w.name.CompareAndSwap(false, true) {
		return // a request without tools says nothing about the name
	}
	const shown = 10
	if len(names) > shown {
		names = append(names[:shown], fmt.Sprintf("and %d more", len(names)-shown))
	}
	err := fmt.Errorf("%w: ToolCallLimit's WithToolName(%s) names none of the request's tools (%s), so its limits count no call",
		ErrToolNotOffered, safetext.Quote(l.cfg.tool, 80), strings.Join(names, ", "))
	reportLoud(ctx, l.cfg.events, Event{Kind: EventMisconfigured, Middleware: limitName, Tool: l.cfg.tool, Err: err})
}

// reportEmpty reports an [EventEmptyResponse] when a response without tool
// calls has no text either (text) although the request offers tools.
func (m *toolArgValidation) reportEmpty(ctx context.Context, tools []Tool, text string, attempt int) {
	if strings.TrimSpace(text) != "" || len(tools) == 0 {
		return
	}
	err := fmt.Errorf("%w: no tool call and no text (langchaingo's native ollama client drops tool calls: "+
		"use its openai client with Ollama's /v1 endpoint)", ErrEmptyResponse)
	m.emit(ctx, Event{Kind: EventEmptyResponse, Attempt: attempt, Err: err})
}

// placeholderArg is the one argument langchaingo's OpenAIFunctionsAgent
// declares for every tool.
const placeholderArg = "__arg1"

// isStringPlaceholder reports whether schema (as a request offers it) is
// langchaingo's one-string placeholder: an object schema whose only
// property is "__arg1".
func isStringPlaceholder(schema any) bool {
	var m map[string]any
	switch s := schema.(type) {
	case map[string]any:
		m = s
	case json.RawMessage:
		return rawPlaceholder(s)
	case []byte:
		return rawPlaceholder(s)
	case string:
		return rawPlaceholder([]byte(s))
	default:
		return false
	}
	props, _ := m["properties"].(map[string]any)
	_, ok := props[placeholderArg]
	return ok && len(props) == 1
}

func rawPlaceholder(raw []byte) bool {
	if !bytes.Contains(raw, []byte(placeholderArg)) {
		return false
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	_, ok := s.Properties[placeholderArg]
	return ok && len(s.Properties) == 1
}

// checkPlaceholders reports, once per ToolArgValidation value, a tool of
// the request whose schema is langchaingo's one-string placeholder.
func (m *toolArgValidation) checkPlaceholders(ctx context.Context, tools []Tool) {
	if m.placeholder.Load() {
		return
	}
	for _, t := range tools {
		if !isStringPlaceholder(t.Schema) || !m.placeholder.CompareAndSwap(false, true) {
			continue
		}
		err := fmt.Errorf("%w: tool %s is offered as {%q: string} (langchaingo's agents.OpenAIFunctionsAgent offers every tool so), "+
			"so its typed arguments are neither shown to the model nor validated; offer each tool's own schema: "+
			"lctool.OfferSchemas(lctool.SchemaFor(tool, schema), ...) before ToolArgValidation", ErrStringPlaceholder, safetext.Quote(t.Name, 80), placeholderArg)
		reportLoud(ctx, m.cfg.events, Event{Kind: EventMisconfigured, Middleware: validationName, Tool: t.Name, Err: err})
		return
	}
}
