package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// advisingCodec is a countingCodec whose host knows a miswiring: a tool
// named "opaque" cannot be validated as the model sees it, and an empty
// answer has a usual cause.
type advisingCodec struct{ *countingCodec }

var errOpaque = errors.New("opaque tool")

func (advisingCodec) AdviseTools(tools []guard.Tool) (string, error) {
	for _, t := range tools {
		if t.Name == "opaque" {
			return t.Name, errOpaque
		}
	}
	return "", nil
}

func (advisingCodec) AdviseEmpty() string { return "the client drops tool calls" }

// A codec's Advisor is reported by ToolArgValidation: what it says of the
// tools offered once per middleware value (as the calls are checked) (EventMisconfigured), and the cause of
// an empty answer in its EventEmptyResponse; a codec without one gets the
// bare events.
func TestAdvisorReported(t *testing.T) {
	tools := []guard.Tool{{Name: "opaque"}}
	// The first answer calls the tool; the two after it are empty.
	var answers int
	model := func(context.Context, *countReq) (*countResp, error) {
		answers++
		if answers == 1 {
			return &countResp{calls: []guard.Call{{ID: "1", Name: "opaque", Args: []byte(`{}`)}}}, nil
		}
		return &countResp{}, nil
	}
	for _, tc := range []struct {
		name      string
		codec     guard.Codec[*countReq, *countResp]
		misconfig int
		cause     string
	}{
		{"advisor", advisingCodec{&countingCodec{n: map[string]int{}}}, 1, "(the client drops tool calls)"},
		{"none", &countingCodec{n: map[string]int{}}, 0, "no tool call and no text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var misconfig []guard.Event
			var emptyErrs []error
			h := guard.ToolArgValidation(tc.codec, guard.WithEventHandler(func(_ context.Context, e guard.Event) {
				switch e.Kind {
				case guard.EventMisconfigured:
					misconfig = append(misconfig, e)
				case guard.EventEmptyResponse:
					emptyErrs = append(emptyErrs, e.Err)
				}
			}))(model)
			answers = 0
			for range 3 {
				if _, err := h(context.Background(), &countReq{tools: tools}); err != nil {
					t.Fatal(err)
				}
			}
			if len(misconfig) != tc.misconfig || (tc.misconfig > 0 && (!errors.Is(misconfig[0].Err, errOpaque) || misconfig[0].Tool != "opaque")) {
				t.Errorf("misconfigured events %v, want %d naming the opaque tool", misconfig, tc.misconfig)
			}
			if len(emptyErrs) != 2 || !errors.Is(emptyErrs[0], guard.ErrEmptyResponse) || !strings.HasSuffix(emptyErrs[0].Error(), tc.cause) {
				t.Errorf("empty-response errors %v, want 2 wrapping ErrEmptyResponse ending %q", emptyErrs, tc.cause)
			}
		})
	}
}
