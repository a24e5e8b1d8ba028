package httpguard

import (
	"encoding/json"
	"fmt"
)

// The hand decoder of an Anthropic stream event as it was before
// decodeMessagesParsed read each event in one pass: a validity pass over
// the event, then a walk of its members into messagesEvent, which
// encoding/json would read by the tags (FuzzStreamEvents holds it to
// encoding/json), then its delta decoded again from the start. Kept as
// the oracle that FuzzMessagesParsed holds decodeMessagesParsed to.

// messagesEvent is what the wire code read of an Anthropic stream event.
type messagesEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
	// blockType is content_block_start's block type.
	blockType string
	// delta is content_block_delta's delta, decoded.
	delta messagesDelta
}

type messagesDelta struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Thinking    string          `json:"thinking"`
	Signature   string          `json:"signature"`
	PartialJSON string          `json:"partial_json"`
	Citation    json.RawMessage `json:"citation"`
}

// parseMessagesEventOld is the old parse of ev.
func parseMessagesEventOld(ev streamEvent) (*messagesEvent, error) {
	e := new(messagesEvent)
	if err := decodeMessagesEvent(ev.Data, e); err != nil {
		return nil, fmt.Errorf("%w: anthropic event: %w", errJSON, err)
	}
	if e.Type == "error" || ev.Event == "error" {
		return nil, &upstreamStreamError{Data: append([]byte(nil), ev.Data...)}
	}
	switch e.Type {
	case "content_block_start":
		var err error
		if e.blockType, err = typeOf(e.ContentBlock, span{0, len(e.ContentBlock)}); err != nil {
			return nil, fmt.Errorf("%w: anthropic content block: %w", errJSON, err)
		}
	case "content_block_delta":
		if err := decodeMessagesDelta(e.Delta, &e.delta); err != nil {
			return nil, fmt.Errorf("%w: %w", errJSON, err)
		}
	}
	return e, nil
}

// decodeMessagesEvent decodes an Anthropic stream event into e (its
// members; parseMessagesEventOld reads the block type and delta).
func decodeMessagesEvent(data []byte, e *messagesEvent) error {
	it, ok, err := decodeObject(data)
	if err != nil || !ok {
		return err
	}
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("type"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeMessagesType(data, v, &e.Type)
			}
		case it.is("index"):
			err = s.mark(&it, 1)
			if err == nil {
				err = decodeInt(data, v, &e.Index)
			}
		case it.is("message"):
			err = s.mark(&it, 2)
			e.Message = raw(data, v)
		case it.is("content_block"):
			err = s.mark(&it, 3)
			e.ContentBlock = raw(data, v)
		case it.is("delta"):
			err = s.mark(&it, 4)
			e.Delta = raw(data, v)
		case it.is("usage"):
			err = s.mark(&it, 5)
			e.Usage = raw(data, v)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

// decodeMessagesDelta decodes a content_block_delta's delta.
func decodeMessagesDelta(data []byte, d *messagesDelta) error {
	if len(data) == 0 {
		return errJSON // as encoding/json refuses no input
	}
	it, ok, err := decodeObject(data)
	if err != nil || !ok {
		return err
	}
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("type"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeMessagesType(data, v, &d.Type)
			}
		case it.is("text"):
			err = s.mark(&it, 1)
			if err == nil {
				err = decodeString(data, v, &d.Text)
			}
		case it.is("thinking"):
			err = s.mark(&it, 2)
			if err == nil {
				err = decodeString(data, v, &d.Thinking)
			}
		case it.is("signature"):
			err = s.mark(&it, 3)
			if err == nil {
				err = decodeString(data, v, &d.Signature)
			}
		case it.is("partial_json"):
			err = s.mark(&it, 4)
			if err == nil {
				err = decodeString(data, v, &d.PartialJSON)
			}
		case it.is("citation"):
			err = s.mark(&it, 5)
			d.Citation = raw(data, v)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}
