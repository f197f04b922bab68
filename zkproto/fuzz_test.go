package zkproto

import (
	"bytes"
	"reflect"
	"testing"
)

// replyRecords are the records a client decodes; the fuzzer decodes its input as each.
var replyRecords = []func() Record{
	func() Record { return new(ConnectResponse) },
	func() Record { return new(ReplyHeader) },
	func() Record { return new(Create2Response) },
	func() Record { return new(GetDataResponse) },
	func() Record { return new(GetACLResponse) },
	func() Record { return new(GetChildren2Response) },
	func() Record { return new(WatcherEvent) },
	func() Record { return new(WhoAmIResponse) },
	func() Record { return new(MultiResponse) },
}

// FuzzDecodeJute: any bytes into ParseFrame, ParseConnectRequest, ParseRequest and the
// reply decoders never panic, and whatever decodes re-encodes to bytes that decode to the
// same value. (Allocation is bounded by construction, and checked by
// TestHugeLengthsDoNotAllocate and TestAllocationBounded.)
func FuzzDecodeJute(f *testing.F) {
	for _, r := range sampleRequests() {
		f.Add(AppendRequest(nil, r.Header, r.Body))
	}
	for _, r := range sampleRecords() {
		f.Add(AppendFrame(nil, r.Append))
	}
	f.Add([]byte("ruok"))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		payload, n, err := ParseFrame(data, DefaultMaxBuffer)
		switch {
		case err == nil:
			if n < 4 || n > len(data) || len(payload) != n-4 {
				t.Fatalf("ParseFrame: n %d, payload %d, input %d", n, len(payload), len(data))
			}
		case err == ErrIncomplete:
			if n != 0 && n <= len(data) {
				t.Fatalf("ParseFrame: incomplete with n %d of %d", n, len(data))
			}
			payload = data
		case err == ErrTooLarge:
			payload = data
		default:
			t.Fatalf("ParseFrame: %v", err)
		}
		if len(payload) > DefaultMaxBuffer {
			return
		}

		if cr, err := ParseConnectRequest(payload); err == nil {
			again, err := ParseConnectRequest(cr.Append(nil))
			if err != nil || !reflect.DeepEqual(again, cr) {
				t.Fatalf("connect round trip: %+v -> %+v, %v", cr, again, err)
			}
		}

		if req, err := ParseRequest(payload, DefaultMaxBuffer); err == nil {
			frame := AppendRequest(nil, req.Header, req.Body)
			p2, _, err := ParseFrame(frame, DefaultMaxBuffer)
			if err != nil {
				t.Fatalf("re-encoded frame: %v", err)
			}
			again, err := ParseRequest(p2, DefaultMaxBuffer)
			if err != nil || !reflect.DeepEqual(again, req) {
				t.Fatalf("request round trip:\n%+v\n-> %+v, %v", req, again, err)
			}
			// The encoding is canonical from then on.
			if !bytes.Equal(AppendRequest(nil, again.Header, again.Body), frame) {
				t.Fatal("re-encoding is not stable")
			}
		}

		for _, mk := range replyRecords {
			r := mk()
			if DecodeRecord(payload, r) != nil {
				continue
			}
			r2 := mk()
			if err := DecodeRecord(r.Append(nil), r2); err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("%T round trip: %+v -> %+v, %v", r, r, r2, err)
			}
		}
	})
}
