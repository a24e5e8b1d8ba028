package httpguard

// The AWS event stream framing (application/vnd.amazon.eventstream), by
// hand: the AWS SDK stays out of this module. Amazon Bedrock's
// ConverseStream answers with it.
//
// A message is
//
//	total length   uint32 (big endian; the whole message, these 4 bytes and the CRC included)
//	headers length uint32
//	prelude CRC    uint32 (CRC-32 IEEE of the 8 bytes above)
//	headers        headers length bytes: name length uint8, name, value type uint8, value
//	payload        total - headers - 16 bytes
//	message CRC    uint32 (CRC-32 IEEE of everything before it)
//
// A header value is typed: 0 true, 1 false (no bytes), 2 int8, 3 int16,
// 4 int32, 5 int64, 6 bytes and 7 string (a uint16 length, then the
// bytes), 8 timestamp (int64 ms), 9 uuid (16 bytes). Bedrock's messages
// carry three string headers: ":message-type" ("event", "exception" or
// "error"), then ":event-type" (messageStart, contentBlockDelta, …) or
// ":exception-type" (throttlingException, …) or ":error-code" and
// ":error-message", and ":content-type" (application/json) for a JSON
// payload.
//
// The reader hands a message on as a streamEvent, as every framing does
// (framing.go), so that the gates and assemblers see events only: Event is
// the event type of an event, "exception:" and the exception type of an
// exception, "error:" and the error code of an error (whose Data is then
// the error message); Data is the payload. Other headers are not kept:
// Bedrock sends none. formatEventStream writes such a streamEvent back as a
// message.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// eventStreamType is the content type of an AWS event stream.
const eventStreamType = "application/vnd.amazon.eventstream"

// Bounds of one message, beside MaxBody on the whole: the prelude and CRC
// take 16 bytes; the headers of a message are at most 128 KiB, as the AWS
// event stream specification bounds them.
const (
	eventStreamOverhead   = 16
	maxEventStreamHeaders = 128 << 10
	maxHeaderValue        = 1<<15 - 1 // a string header's value, as the AWS SDK bounds it
)

// The streamEvent.Event prefixes of an exception and of an error message.
const (
	exceptionPrefix = "exception:"
	errorPrefix     = "error:"
)

// errEventStream reports a message that is not an AWS event stream
// message: a length that does not add up, a CRC that does not match, a
// header of an unknown type, a message type it does not know.
var errEventStream = errors.New("httpguard: malformed AWS event stream message")

// eventStreamUnread is why a stream whose framing cannot be read cannot be
// guarded.
const eventStreamUnread = "aws event stream not readable"

// badEventStream returns an unguardable error for a malformed message.
func badEventStream(format string, args ...any) error {
	return unguardable(eventStreamUnread, fmt.Errorf("%w: "+format, append([]any{errEventStream}, args...)...))
}

// awsEventStream is the framing of AWS event streams (framing.go).
type awsEventStream struct{}

func (awsEventStream) contentType() string { return eventStreamType }

func (awsEventStream) isStream(ct string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), eventStreamType)
}

func (awsEventStream) newReader(r io.Reader, max int) eventReader {
	return newEventStreamReader(r, max)
}

func (awsEventStream) format(ev streamEvent) []byte { return formatEventStream(ev) }

// eventStreamReader reads AWS event stream messages, bounded: a message
// longer than max is errTooLarge, found from its prelude before anything
// past it is read.
type eventStreamReader struct {
	r       io.Reader
	max     int
	buf     []byte
	prelude [12]byte // kept here: on next's stack it escapes to io.ReadFull
}

func newEventStreamReader(r io.Reader, max int) *eventStreamReader {
	return &eventStreamReader{r: r, max: max}
}

// next returns the next message as an streamEvent (see the top of this
// file); io.EOF after the last. A stream that ends inside a message is
// io.ErrUnexpectedEOF, wrapped: the connection dropped, and what the
// message held is lost. A malformed message is unguardable (errEventStream
// inside).
func (r *eventStreamReader) next() (streamEvent, error) {
	prelude := r.prelude[:]
	if n, err := io.ReadFull(r.r, prelude); err != nil {
		if errors.Is(err, io.EOF) && n == 0 {
			return streamEvent{}, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return streamEvent{}, fmt.Errorf("httpguard: aws event stream cut off in a message prelude: %w", io.ErrUnexpectedEOF)
		}
		return streamEvent{}, err
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	headers := binary.BigEndian.Uint32(prelude[4:8])
	if crc := crc32.ChecksumIEEE(prelude[:8]); crc != binary.BigEndian.Uint32(prelude[8:12]) {
		return streamEvent{}, badEventStream("prelude CRC %08x, computed %08x", binary.BigEndian.Uint32(prelude[8:12]), crc)
	}
	if int64(total) > int64(r.max) {
		return streamEvent{}, fmt.Errorf("httpguard: aws event stream message of %d bytes: %w", total, errTooLarge)
	}
	if total < eventStreamOverhead || headers > total-eventStreamOverhead || headers > maxEventStreamHeaders {
		return streamEvent{}, badEventStream("message of %d bytes with %d bytes of headers", total, headers)
	}
	if cap(r.buf) < int(total) {
		r.buf = make([]byte, total)
	}
	msg := r.buf[:total]
	copy(msg, prelude)
	if _, err := io.ReadFull(r.r, msg[12:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return streamEvent{}, fmt.Errorf("httpguard: aws event stream cut off in a message: %w", io.ErrUnexpectedEOF)
		}
		return streamEvent{}, err
	}
	end := total - 4
	if crc := crc32.ChecksumIEEE(msg[:end]); crc != binary.BigEndian.Uint32(msg[end:]) {
		return streamEvent{}, badEventStream("message CRC %08x, computed %08x", binary.BigEndian.Uint32(msg[end:]), crc)
	}
	return decodeEventStreamMessage(msg[12:12+headers], msg[12+headers:end])
}

// decodeEventStreamMessage returns the streamEvent of a message with the
// header block hs and payload (see the top of this file). The payload is
// copied: the reader's buffer is reused.
func decodeEventStreamMessage(hs, payload []byte) (streamEvent, error) {
	var msgType, eventType, exceptionType, errorCode, errorMessage []byte
	for len(hs) > 0 {
		name, typ, value, rest, err := nextHeader(hs)
		if err != nil {
			return streamEvent{}, err
		}
		hs = rest
		if typ != 7 {
			continue // a string header is all Bedrock sends
		}
		v := value[2:]
		switch string(name) {
		case ":message-type":
			msgType = v
		case ":event-type":
			eventType = v
		case ":exception-type":
			exceptionType = v
		case ":error-code":
			errorCode = v
		case ":error-message":
			errorMessage = v
		}
	}
	switch string(msgType) {
	case "event":
		if len(eventType) == 0 {
			return streamEvent{}, badEventStream("event without :event-type")
		}
		return streamEvent{Event: eventTypeName(eventType), Data: append([]byte(nil), payload...)}, nil
	case "exception":
		return streamEvent{Event: exceptionPrefix + string(exceptionType), Data: append([]byte(nil), payload...)}, nil
	case "error":
		return streamEvent{Event: errorPrefix + string(errorCode), Data: []byte(string(errorMessage))}, nil
	}
	return streamEvent{}, badEventStream("message type %.64q", msgType)
}

// eventTypeName is the event type t as a string: one of ConverseStream's
// without allocating.
func eventTypeName(t []byte) string {
	switch string(t) {
	case "messageStart":
		return "messageStart"
	case "contentBlockStart":
		return "contentBlockStart"
	case "contentBlockDelta":
		return "contentBlockDelta"
	case "contentBlockStop":
		return "contentBlockStop"
	case "messageStop":
		return "messageStop"
	case "metadata":
		return "metadata"
	}
	return string(t)
}

// nextHeader reads the header at the start of hs: its name, value type
// and value bytes (a bytes or string value with its length), and what
// follows it.
func nextHeader(hs []byte) (name []byte, typ byte, value, rest []byte, err error) {
	n := int(hs[0])
	if len(hs) < 1+n+1 {
		return nil, 0, nil, nil, badEventStream("header cut off")
	}
	name, typ, hs = hs[1:1+n], hs[1+n], hs[2+n:]
	size := 0
	switch typ {
	case 0, 1: // true, false
	case 2: // int8
		size = 1
	case 3: // int16
		size = 2
	case 4: // int32
		size = 4
	case 5, 8: // int64, timestamp
		size = 8
	case 9: // uuid
		size = 16
	case 6, 7: // bytes, string
		if len(hs) < 2 {
			return nil, 0, nil, nil, badEventStream("header %.64q cut off", name)
		}
		size = 2 + int(binary.BigEndian.Uint16(hs))
	default:
		return nil, 0, nil, nil, badEventStream("header %.64q of unknown type %d", name, typ)
	}
	if len(hs) < size {
		return nil, 0, nil, nil, badEventStream("header %.64q cut off", name)
	}
	return name, typ, hs[:size], hs[size:], nil
}

// formatEventStream returns ev (a streamEvent as eventStreamReader makes
// them) as the bytes of an AWS event stream message, in one allocation.
func formatEventStream(ev streamEvent) []byte {
	type header struct{ name, value string }
	var hs [3]header
	payload := ev.Data
	switch {
	case strings.HasPrefix(ev.Event, exceptionPrefix):
		hs = [3]header{{":exception-type", strings.TrimPrefix(ev.Event, exceptionPrefix)},
			{":content-type", "application/json"}, {":message-type", "exception"}}
	case strings.HasPrefix(ev.Event, errorPrefix):
		hs = [3]header{{":error-code", strings.TrimPrefix(ev.Event, errorPrefix)},
			{":error-message", string(ev.Data)}, {":message-type", "error"}}
		payload = nil
	default:
		hs = [3]header{{":event-type", ev.Event}, {":content-type", "application/json"}, {":message-type", "event"}}
	}
	size := 0
	for i := range hs {
		if len(hs[i].value) > maxHeaderValue {
			hs[i].value = hs[i].value[:maxHeaderValue] // an error message: its start says why
		}
		size += 1 + len(hs[i].name) + 1 + 2 + len(hs[i].value)
	}
	total := eventStreamOverhead + size + len(payload)
	b := make([]byte, 0, total)
	b = binary.BigEndian.AppendUint32(b, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	for _, h := range hs {
		b = append(b, byte(len(h.name)))
		b = append(b, h.name...)
		b = append(b, 7)
		b = binary.BigEndian.AppendUint16(b, uint16(len(h.value)))
		b = append(b, h.value...)
	}
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}
