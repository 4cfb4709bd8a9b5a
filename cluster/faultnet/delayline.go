package faultnet

import (
	"net"
	"sync"
	"time"
)

// A delay line carries one connection's writes to the wire, each at its own
// due time: when it was written plus the delay drawn for it. This is
// netem's model (a qdisc that holds each packet for its delay), not a
// sleeping writer: pipelined writes overlap in flight, so a 50 ms link
// delays each of five requests in flight by 50 ms, not the fifth by 250 ms.
// A write the layer delays returns at once, as a write into the kernel's
// socket buffer does; its bytes reach the wire when due.
//
// Order is kept (TCP delivers in order): a write is never due before the one
// ahead of it, so a lost segment's retransmission delay holds up what
// follows it (head-of-line blocking), and jitter never reorders bytes.
type delayLine struct {
	mu sync.Mutex // guards the fields below; never held across a wait (the simulation's rule)
	// queue holds written bytes not yet on the wire, oldest first; its due
	// times never decrease. bytes is their total, at most delayLineMax
	// beyond one write (a write is taken whole when the line has room).
	queue []pending
	bytes int
	// last is the due time of the newest write queued, kept past the queue
	// emptying so that order holds across a drain.
	last time.Time
	// running: a deliverer goroutine owns the queue's head. At most one.
	running bool
	// err is the wire's first write error: later writes return it, as a
	// socket's do after the connection broke.
	err error
	// closeWhenDrained: Close was called with bytes queued; the deliverer
	// closes the connection after the last of them, as close(2) on a
	// socket lets the kernel send what is buffered.
	closeWhenDrained bool
	// room is closed and replaced whenever bytes shrink, waking writers
	// waiting for room.
	room chan struct{}
}

type pending struct {
	due  time.Time
	data []byte
}

// delayLineMax bounds the bytes a connection holds in its delay line, as a
// socket's send buffer does: a writer past it waits for room.
const delayLineMax = 4 << 20

// queuedStallMax bounds how long queued bytes wait for a cut link to heal
// before the connection is given up, as TCP gives up retransmitting
// (tcp_retries2; far shorter here, so that a run's teardown is bounded).
const queuedStallMax = 2 * time.Minute

// write queues b to go out after delay d, waiting for room while the line is
// full (until the write deadline or Close).
func (c *conn) delayedWrite(b []byte, d time.Duration) (int, error) {
	line := &c.line
	for {
		line.mu.Lock()
		if line.err != nil {
			err := line.err
			line.mu.Unlock()
			return 0, err
		}
		if line.bytes == 0 || line.bytes+len(b) <= delayLineMax {
			line.enqueueLocked(b, d)
			start := !line.running
			line.running = true
			line.mu.Unlock()
			if start {
				c.l.deliverer(c.deliver)
			}
			return len(b), nil
		}
		if line.room == nil {
			line.room = make(chan struct{})
		}
		room := line.room
		line.mu.Unlock()
		if err := c.waitWrite(room); err != nil {
			return 0, err
		}
	}
}

func (line *delayLine) enqueueLocked(b []byte, d time.Duration) {
	due := time.Now().Add(d)
	if due.Before(line.last) {
		due = line.last
	}
	line.last = due
	line.queue = append(line.queue, pending{due: due, data: append([]byte(nil), b...)})
	line.bytes += len(b)
}

// busy reports whether bytes are queued or being written: a write that the
// layer does not delay must then queue behind them, to keep order.
func (line *delayLine) busy() bool {
	line.mu.Lock()
	defer line.mu.Unlock()
	return line.running
}

// waitWrite waits for room to be closed, bounded by the write deadline and
// Close.
func (c *conn) waitWrite(room <-chan struct{}) error {
	c.mu.Lock()
	deadline, reset := c.writeDeadline, c.deadlineSet
	c.mu.Unlock()
	var timer <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return errTimeout
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-room:
	case <-reset:
	case <-timer:
		return errTimeout
	case <-c.closed:
		return net.ErrClosed
	}
	return nil
}

// deliver writes the queue's head to the wire when it falls due, until the
// queue is empty; then it ends. A cut link holds the head (TCP retransmits)
// until a heal, Close, or queuedStallMax.
func (c *conn) deliver() {
	line := &c.line
	for {
		line.mu.Lock()
		if len(line.queue) == 0 {
			line.running = false
			closeNow := line.closeWhenDrained
			line.mu.Unlock()
			if closeNow {
				c.Conn.Close()
			}
			return
		}
		p := line.queue[0]
		line.mu.Unlock()
		if d := time.Until(p.due); d > 0 {
			time.Sleep(d)
		}
		err := c.stallQueued()
		if err == nil {
			_, err = c.Conn.Write(p.data)
		}
		line.mu.Lock()
		line.queue[0] = pending{}
		line.queue = line.queue[1:]
		line.bytes -= len(p.data)
		if line.room != nil {
			close(line.room)
			line.room = nil
		}
		if err != nil {
			// The connection broke: what is queued is lost with it.
			line.err, line.queue, line.bytes = err, nil, 0
			line.closeWhenDrained = true
		}
		line.mu.Unlock()
	}
}

// stallQueued holds queued bytes while the peer is blocked: until a heal,
// or Close (the bytes are dropped, as a socket closed in a partition sends
// nothing), or queuedStallMax (the connection is given up).
func (c *conn) stallQueued() error {
	var giveUp <-chan time.Time
	for {
		blocked, changed := c.l.blocked(c.peer)
		if !blocked {
			return nil
		}
		if giveUp == nil {
			t := time.NewTimer(queuedStallMax)
			defer t.Stop()
			giveUp = t.C
		}
		select {
		case <-changed:
		case <-c.closed:
			return net.ErrClosed
		case <-giveUp:
			return errTimeout
		}
	}
}

// closeLine closes the connection now if nothing is queued, else leaves it to
// the deliverer once the queue has drained.
func (c *conn) closeLine() error {
	line := &c.line
	line.mu.Lock()
	if line.running {
		line.closeWhenDrained = true
		line.mu.Unlock()
		return nil
	}
	line.mu.Unlock()
	return c.Conn.Close()
}
