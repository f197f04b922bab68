package consensus

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nanokv/nanokv/consensus/raft"
)

// stream is frames as a TCPTransport writes them: each its length, then its bytes.
func stream(frames ...[]byte) []byte {
	var b []byte
	for _, f := range frames {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// readFrames feeds s to a frameReader as netserve.ReadLoop would, each read taking at
// most chunk(len(space)) bytes, after the first pre bytes fed whole (what the hello's
// reader had buffered). It returns the frames handed on and the reader.
func readFrames(s []byte, pre int, chunk func(room int) int, stopAfter int) ([][]byte, *frameReader) {
	var got [][]byte
	fr := &frameReader{handle: func(f []byte) bool {
		got = append(got, f)
		return len(got) != stopAfter
	}}
	pre = min(pre, len(s))
	if !fr.feed(s[:pre]) {
		return got, fr
	}
	for s = s[pre:]; len(s) > 0; {
		sp := fr.space()
		n := copy(sp[:chunk(len(sp))], s)
		s = s[n:]
		if !fr.got(n) {
			break
		}
	}
	return got, fr
}

func TestFrameReaderCutsAnySplitOfTheStream(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (3*frameScratch)/16+5) // read into its own buffer
	frames := [][]byte{[]byte("a"), []byte("hello, member"), big, []byte("after the big one"), make([]byte, frameScratch), []byte("z")}
	s := stream(frames...)
	rng := rand.New(rand.NewPCG(1, 2))
	splits := map[string]func(int) int{
		"whole":      func(room int) int { return room },
		"bytewise":   func(int) int { return 1 },
		"random":     func(room int) int { return 1 + rng.IntN(room) },
		"seven":      func(room int) int { return min(7, room) },
		"scratchful": func(room int) int { return min(frameScratch, room) },
	}
	for name, chunk := range splits {
		for _, pre := range []int{0, 3, 20, len(s)} {
			got, fr := readFrames(s, pre, chunk, -1)
			if fr.err != nil || len(got) != len(frames) {
				t.Fatalf("%s, %d buffered: %d frames, err %v", name, pre, len(got), fr.err)
			}
			for i := range frames {
				if !bytes.Equal(got[i], frames[i]) {
					t.Fatalf("%s, %d buffered: frame %d differs (%d bytes, want %d)", name, pre, i, len(got[i]), len(frames[i]))
				}
			}
			// Each frame has a buffer of its own: the log keeps what aliases it.
			got[0][0] = 'X'
			if got[1][0] != 'h' {
				t.Fatalf("%s: frames share a buffer", name)
			}
		}
	}
}

func TestFrameReaderStopsOnBadLengthOrHandler(t *testing.T) {
	whole := func(room int) int { return room }
	for _, bad := range []uint32{0, maxFrame + 1} {
		s := append(stream([]byte("ok")), binary.BigEndian.AppendUint32(nil, bad)...)
		got, fr := readFrames(append(s, "tail"...), 0, whole, -1)
		if len(got) != 1 || fr.err == nil || !strings.Contains(fr.err.Error(), "frame of") {
			t.Fatalf("length %d: %d frames, err %v", bad, len(got), fr.err)
		}
	}
	s := stream([]byte("one"), []byte("two"), []byte("three"))
	if got, fr := readFrames(s, 0, whole, 2); len(got) != 2 || fr.err != nil {
		t.Fatalf("a handler that stops after two: %d frames, err %v", len(got), fr.err)
	}
	big := make([]byte, 2*frameScratch)
	if got, _ := readFrames(stream(big, []byte("next")), 0, whole, 1); len(got) != 1 {
		t.Fatalf("a handler that stops after a frame read directly: %d frames", len(got))
	}
}

// FuzzFrameReader: whatever the stream and however it is split, the frames handed on
// are those a plain reader of length-prefixed frames finds, up to the first bad length.
func FuzzFrameReader(f *testing.F) {
	f.Add(stream([]byte("a"), []byte("bc")), uint8(1), uint16(0))
	f.Add(stream(make([]byte, frameScratch+3)), uint8(200), uint16(5))
	f.Add([]byte{0, 0, 0, 0, 1}, uint8(3), uint16(1))
	f.Fuzz(func(t *testing.T, s []byte, step uint8, pre uint16) {
		var want [][]byte
		wantErr := false
		for r := s; len(r) >= 4; {
			n := binary.BigEndian.Uint32(r)
			if n == 0 || n > maxFrame {
				wantErr = true
				break
			}
			if n > 1<<20 {
				return // allocated whole when its length arrives: slow, and no new path
			}
			if uint64(len(r)-4) < uint64(n) {
				break
			}
			want = append(want, r[4:4+n])
			r = r[4+n:]
		}
		k := 1 + int(step)
		got, fr := readFrames(s, int(pre), func(room int) int { return min(k, room) }, -1)
		if len(got) != len(want) || (fr.err != nil) != wantErr {
			t.Fatalf("%d frames (err %v), want %d (error %v)", len(got), fr.err, len(want), wantErr)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d differs", i)
			}
		}
	})
}

// A bad frame length that arrives with the hello, in the same segment, still ends the
// connection with an error the transport logs (not as a connection that ended as
// planned), and nothing is delivered.
func TestTransportRefusesABadFrameBehindTheHello(t *testing.T) {
	logged := make(chan string, 8)
	delivered := make(chan raft.Message, 1)
	b := listenT(t, 2, 7, "", func(m raft.Message) { delivered <- m }, func(f string, args ...any) {
		logged <- fmt.Sprintf(f, args...)
	})
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Member 1's hello, as its transport writes it, and a frame of no bytes after it in
	// the same write.
	a := listenT(t, 1, 7, "", func(raft.Message) {}, nil)
	hello := binary.BigEndian.AppendUint32(a.hello(), 0)
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-logged:
		if !strings.Contains(msg, "frame of 0 bytes from member 1") {
			t.Fatalf("logged %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the bad frame was not reported")
	}
	select {
	case m := <-delivered:
		t.Fatalf("delivered %+v", m)
	default:
	}
}
