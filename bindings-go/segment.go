package polylock

// #include "polylock.h"
import "C"

import "runtime"

// Segment hands out Leaf-style segment IDs of one tag: ranges reserved durably in the
// store, so IDs never repeat across processes and crashes (a crash leaves gaps). Safe for
// concurrent use.
type Segment struct {
	ptr *C.polylock_segment
	tag string
}

// SegmentOption changes how Client.Segment opens its generator.
type SegmentOption func(*segmentSettings)

type segmentSettings struct {
	step uint64
}

// WithStep sets the first (and smallest) range's size; the default is Leaf's 1000.
func WithStep(step uint64) SegmentOption {
	return func(s *segmentSettings) { s.step = step }
}

// Segment opens the segment generator of tag (Leaf's biz_tag, under the client's namespace).
// ErrUnsupported where the backend keeps no counters.
func (c *Client) Segment(tag string, options ...SegmentOption) (*Segment, error) {
	var settings segmentSettings
	for _, option := range options {
		option(&settings)
	}
	var ptr *C.polylock_segment
	err := c.use(func(client *C.polylock_client) error {
		cTag, err := cString(tag, "the segment tag")
		if err != nil {
			return err
		}
		defer freeCString(cTag)
		return call(func() C.polylock_status {
			return C.polylock_segment_open(client, cTag, C.uint64_t(settings.step), &ptr)
		})
	})
	if err != nil {
		return nil, err
	}
	s := &Segment{ptr: ptr, tag: tag}
	runtime.AddCleanup(s, func(ptr *C.polylock_segment) { C.polylock_segment_free(ptr) }, ptr)
	return s, nil
}

// Tag is the segment's tag.
func (s *Segment) Tag() string { return s.tag }

// NextID is an ID never handed out before for this tag (never 0). ErrExhausted when no
// range could be loaded in time: retry later (Error.RetryAfter says when, if known).
func (s *Segment) NextID() (uint64, error) {
	var id C.uint64_t
	err := call(func() C.polylock_status { return C.polylock_segment_next_id(s.ptr, &id) })
	runtime.KeepAlive(s)
	return uint64(id), err
}

// NextIDs is count IDs (increasing within each range). All or nothing.
func (s *Segment) NextIDs(count int) ([]uint64, error) {
	if count < 0 {
		return nil, errorOf(ErrInvalidArgument, "a count of IDs must not be negative")
	}
	ids := make([]uint64, count)
	if count == 0 {
		return ids, nil
	}
	err := call(func() C.polylock_status {
		return C.polylock_segment_next_ids(s.ptr, C.size_t(count), (*C.uint64_t)(&ids[0]))
	})
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	return ids, nil
}
