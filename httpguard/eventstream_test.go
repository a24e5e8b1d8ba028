package httpguard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// frame builds an event stream message from raw header bytes and a
// payload, with correct lengths and CRCs.
func frame(headers, payload []byte) []byte {
	total := 16 + len(headers) + len(payload)
	b := binary.BigEndian.AppendUint32(nil, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(len(headers)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	b = append(append(b, headers...), payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// strHeader is a string header's bytes.
func strHeader(name, value string) []byte {
	b := append([]byte{byte(len(name))}, name...)
	b = append(b, 7)
	b = binary.BigEndian.AppendUint16(b, uint16(len(value)))
	return append(b, value...)
}

func readEventStream(r io.Reader, max int) ([]streamEvent, error) {
	rd := newEventStreamReader(r, max)
	var out []streamEvent
	for {
		ev, err := rd.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// Events, exceptions and errors survive formatEventStream and the reader
// as they were, read whole or a byte at a time.
func TestEventStreamRoundTrip(t *testing.T) {
	evs := []streamEvent{
		{Event: "messageStart", Data: []byte(`{"role":"assistant"}`)},
		{Event: "contentBlockDelta", Data: []byte(`{"contentBlockIndex":0,"delta":{"text":"Hi ☃"}}`)},
		{Event: "exception:throttlingException", Data: []byte(`{"message":"slow down"}`)},
		{Event: "error:InternalFailure", Data: []byte("it broke")},
	}
	var stream []byte
	for _, ev := range evs {
		stream = append(stream, formatEventStream(ev)...)
	}
	for _, r := range []io.Reader{bytes.NewReader(stream), iotest.OneByteReader(bytes.NewReader(stream))} {
		got, err := readEventStream(r, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(evs) {
			t.Fatalf("read %d events, want %d", len(got), len(evs))
		}
		for i := range evs {
			if got[i].Event != evs[i].Event || !bytes.Equal(got[i].Data, evs[i].Data) {
				t.Errorf("event %d = %s %q, want %s %q", i, got[i].Event, got[i].Data, evs[i].Event, evs[i].Data)
			}
		}
	}
}

// The reader skips headers of every value type it does not keep, as the
// AWS SDK's decoder reads them.
func TestEventStreamHeaderTypes(t *testing.T) {
	var hs []byte
	hs = append(hs, strHeader(":event-type", "metadata")...)
	for _, h := range [][]byte{
		{4, 't', 'r', 'u', 'e', 0},
		{5, 'f', 'a', 'l', 's', 'e', 1},
		{4, 'b', 'y', 't', 'e', 2, 0xcf},
		{5, 'i', 'n', 't', '1', '6', 3, 0, 42},
		{5, 'i', 'n', 't', '3', '2', 4, 0, 0, 0xa0, 0x0c},
		{5, 'i', 'n', 't', '6', '4', 5, 0, 0, 0, 0, 2, 0x87, 0x57, 0xb2},
		{5, 'b', 'y', 't', 'e', 's', 6, 0, 3, 'a', 'b', 'c'},
		{2, 't', 's', 8, 0, 0, 0, 0, 0, 0x84, 0x5f, 0xed},
		append([]byte{4, 'u', 'u', 'i', 'd', 9}, bytes.Repeat([]byte{7}, 16)...),
	} {
		hs = append(hs, h...)
	}
	hs = append(hs, strHeader(":message-type", "event")...)
	got, err := readEventStream(bytes.NewReader(frame(hs, []byte(`{"usage":{}}`))), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Event != "metadata" || string(got[0].Data) != `{"usage":{}}` {
		t.Errorf("read %q, want one metadata event", got)
	}
}

// A malformed message, a message past the bound and a stream cut inside
// a message are clear errors, never a panic nor a buffer the size a
// prelude claims.
func TestEventStreamBadFrames(t *testing.T) {
	good := frame(append(strHeader(":event-type", "messageStart"), strHeader(":message-type", "event")...), []byte(`{"role":"assistant"}`))
	corrupt := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x01
		return b
	}
	huge := binary.BigEndian.AppendUint32(nil, 1<<30)
	huge = binary.BigEndian.AppendUint32(huge, 0)
	huge = binary.BigEndian.AppendUint32(huge, crc32.ChecksumIEEE(huge))
	tests := []struct {
		name    string
		in      []byte
		want    string
		tooBig  bool
		cut     bool
		badForm bool
	}{
		{name: "payload byte flipped", in: corrupt(len(good) - 6), want: "message CRC", badForm: true},
		{name: "message CRC flipped", in: corrupt(len(good) - 1), want: "message CRC", badForm: true},
		{name: "prelude CRC flipped", in: corrupt(9), want: "prelude CRC", badForm: true},
		{name: "length flipped", in: corrupt(3), want: "prelude CRC", badForm: true},
		{name: "a message of 1 GiB claimed", in: huge, want: "1073741824 bytes", tooBig: true},
		{name: "cut in the prelude", in: good[:7], want: "cut off", cut: true},
		{name: "cut in the payload", in: good[:len(good)-9], want: "cut off", cut: true},
		{name: "headers longer than the message", in: frameLens(40, 30), want: "30 bytes of headers", badForm: true},
		{name: "shorter than a prelude and CRC", in: frameLens(12, 0), want: "message of 12 bytes", badForm: true},
		{name: "header of unknown type", in: frame([]byte{1, 'x', 42}, nil), want: "unknown type 42", badForm: true},
		{name: "header cut", in: frame(append(strHeader(":message-type", "event"), 9, 'x'), nil), want: "cut off", badForm: true},
		{name: "no message type", in: frame(strHeader(":event-type", "messageStart"), nil), want: `message type ""`, badForm: true},
		{name: "event without type", in: frame(strHeader(":message-type", "event"), nil), want: "without :event-type", badForm: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readEventStream(bytes.NewReader(tc.in), 1<<20)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read = %v, want an error containing %q", err, tc.want)
			}
			if got := errors.Is(err, errTooLarge); got != tc.tooBig {
				t.Errorf("errors.Is(%v, errTooLarge) = %v, want %v", err, got, tc.tooBig)
			}
			if got := errors.Is(err, io.ErrUnexpectedEOF); got != tc.cut {
				t.Errorf("errors.Is(%v, io.ErrUnexpectedEOF) = %v, want %v", err, got, tc.cut)
			}
			if got := errors.Is(err, errEventStream) && isUnguardable(err); got != tc.badForm {
				t.Errorf("%v is an unguardable errEventStream: %v, want %v", err, got, tc.badForm)
			}
		})
	}
}

// frameLens is a prelude claiming total and headers lengths, with a good
// prelude CRC, followed by total-12 zero bytes.
func frameLens(total, headers uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, total)
	b = binary.BigEndian.AppendUint32(b, headers)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	if total > 12 {
		b = append(b, make([]byte, total-12)...)
	}
	return b
}

// The bound holds at MaxBody: a message of MaxBody bytes is read, one
// byte more is refused from its prelude.
func TestEventStreamBound(t *testing.T) {
	hs := append(strHeader(":event-type", "metadata"), strHeader(":message-type", "event")...)
	fill := MaxBody - 16 - len(hs)
	payload := append(append([]byte(`{"p":"`), bytes.Repeat([]byte("x"), fill-8)...), `"}`...)
	at := frame(hs, payload)
	if len(at) != MaxBody {
		t.Fatalf("frame of %d bytes, want %d", len(at), MaxBody)
	}
	if _, err := readEventStream(bytes.NewReader(at), MaxBody); err != nil {
		t.Errorf("a message of MaxBody bytes: %v", err)
	}
	past := frame(hs, append(payload, ' '))
	if _, err := readEventStream(bytes.NewReader(past), MaxBody); !errors.Is(err, errTooLarge) {
		t.Errorf("a message of MaxBody+1 bytes: %v, want errTooLarge", err)
	}
}
