package guard

import (
	"context"
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
	// wraps [ErrDuplicateTool]), and when the codec's [Advisor] says a
	// tool is offered in a way that cannot be validated as the model sees
	// it (package middleware: langchaingo's one-string placeholder).
	EventMisconfigured EventKind = "misconfigured"
	// EventEmptyResponse: [ToolArgValidation] got a response to a request
	// that offers tools with neither a tool call nor any text. The
	// response is returned as is; Err wraps [ErrEmptyResponse], and names
	// the usual cause when the codec's [Advisor] knows one.
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

// ErrEmptyResponse is wrapped by the Err of an [EventEmptyResponse].
var ErrEmptyResponse = errors.New("guard: empty response to a request offering tools")

// Advisor is an optional interface of a [Codec], found by type assertion: a
// host that knows how its users commonly miswire a stage implements it, and
// [ToolArgValidation] reports what it says. Package middleware's codec does,
// for langchaingo's agents and clients.
type Advisor interface {
	// AdviseTools returns why a tool of tools, as a request offers them,
	// will not be validated as the model sees it, naming the tool; nil
	// when none. ToolArgValidation reports the first such error as an
	// [EventMisconfigured], once per middleware value. It must be safe
	// for concurrent use.
	AdviseTools(tools []Tool) (tool string, err error)
	// AdviseEmpty returns the usual cause of a response with neither tool
	// calls nor text to a request offering tools, "" when it knows none;
	// ToolArgValidation's [EventEmptyResponse] names it.
	AdviseEmpty() string
}

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
// calls has no text either (text) although the request offers tools,
// naming its usual cause when adv knows one.
func (m *toolArgValidation) reportEmpty(ctx context.Context, adv Advisor, tools []Tool, text string, attempt int) {
	if strings.TrimSpace(text) != "" || len(tools) == 0 {
		return
	}
	err := fmt.Errorf("%w: no tool call and no text", ErrEmptyResponse)
	if adv != nil {
		if why := adv.AdviseEmpty(); why != "" {
			err = fmt.Errorf("%w: no tool call and no text (%s)", ErrEmptyResponse, why)
		}
	}
	m.emit(ctx, Event{Kind: EventEmptyResponse, Attempt: attempt, Err: err})
}

// checkTools reports, once per ToolArgValidation value, what adv says of
// the tools a request offers.
func (m *toolArgValidation) checkTools(ctx context.Context, adv Advisor, tools []Tool) {
	if adv == nil || m.advised.Load() {
		return
	}
	tool, err := adv.AdviseTools(tools)
	if err == nil || !m.advised.CompareAndSwap(false, true) {
		return
	}
	reportLoud(ctx, m.cfg.events, Event{Kind: EventMisconfigured, Middleware: validationName, Tool: tool, Err: err})
}
