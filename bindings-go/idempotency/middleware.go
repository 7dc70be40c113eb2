// Package idempotency is net/http middleware for the Idempotency-Key header (the IETF
// HTTPAPI draft "The Idempotency-Key HTTP Header Field", as Stripe's API answers it), over
// polylock's idempotency keys:
//
//   - the first request with a key runs, and its response (status, headers, body) is
//     stored; a server error (5xx) is not stored, so the client's retry runs again;
//   - a repeat with the same key and the same request gets the stored response, with the
//     header Idempotent-Replayed: true, without running the handler;
//   - the key reused with another request (method, path with query, or body) is 422;
//   - a repeat while the first is still running is 409 with Retry-After;
//   - a key that is no key (empty, over 255 bytes, not visible ASCII) is 400;
//   - a request without the header, or of a method the middleware does not apply to (by
//     default all but POST and PATCH), passes through untouched.
//
// A handler that panics gives its key up (the next attempt runs) and the panic goes on.
// Which requests, the key, the fingerprint, the stored form and the refusals are the
// polylock core's rules, the same for every language's middleware: a record this one
// writes replays from a Python or Node service's middleware sharing the namespace, and
// back.
package idempotency

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

// DefaultNamespace is the idempotency namespace the middleware keeps its keys in unless
// WithNamespace says otherwise.
const DefaultNamespace = "http"

// Option changes Middleware.
type Option func(*settings)

type settings struct {
	header      *string
	lifetime    *time.Duration
	methods     []string
	methodsSet  bool
	fingerprint func(*http.Request, []byte) ([]byte, error)
	namespace   string
	err         error
}

// WithHeader is the request header that carries the key (default Idempotency-Key).
func WithHeader(name string) Option {
	return func(s *settings) { s.header = &name }
}

// WithLifetime is how long a completed key replays its response (default 24 h, as Stripe
// keeps keys): the idempotency record's retention.
func WithLifetime(lifetime time.Duration) Option {
	return func(s *settings) { s.lifetime = &lifetime }
}

// WithMethods are the methods the middleware applies to, in any case (default POST and
// PATCH); requests of other methods pass through.
func WithMethods(methods ...string) Option {
	return func(s *settings) { s.methods, s.methodsSet = methods, true }
}

// WithFingerprint replaces the request fingerprint (default: Fingerprint of the method,
// the path with the query as sent, and the body). f gets the request and its body (already
// read; the handler still gets the body from r.Body); what it returns identifies the
// request (kept up to 1 KiB, else hashed, as polylock.FingerprintOf reads it): the key used
// again with another fingerprint is 422. An error from f answers 500 without running the
// handler.
func WithFingerprint(f func(r *http.Request, body []byte) ([]byte, error)) Option {
	return func(s *settings) {
		if f == nil {
			s.err = &polylock.Error{Kind: polylock.ErrInvalidArgument, Status: int(polylock.KindInvalidArgument),
				Message: "idempotency middleware option 'fingerprint' must be a function, got nil"}
			return
		}
		s.fingerprint = f
	}
}

// WithNamespace is the idempotency namespace the keys live in (default "http"): services
// that should replay each other's responses share one.
func WithNamespace(namespace string) Option {
	return func(s *settings) { s.namespace = namespace }
}

// Middleware wraps handlers with Idempotency-Key handling, keeping the keys in client's
// store. Bad options are errors here (polylock.ErrInvalidArgument naming the option), as is
// a backend that keeps no versioned values (polylock.ErrUnsupported). The request body is
// read into memory before the handler runs (limit it upstream with http.MaxBytesReader).
// An attempt may run for the in-progress TTL of polylock's idempotency keys (60 s) before a
// retry may take its key over. If the store cannot be reached, the request is answered 503
// without running the handler.
func Middleware(client *polylock.Client, options ...Option) (func(http.Handler) http.Handler, error) {
	s := settings{namespace: DefaultNamespace}
	for _, option := range options {
		option(&s)
		if s.err != nil {
			return nil, s.err
		}
	}
	checked, err := newRules(s.header, s.lifetime, s.methods, s.methodsSet)
	if err != nil {
		return nil, err
	}
	keys, err := client.Idempotency(s.namespace, polylock.WithRetention(checked.lifetime()))
	if err != nil {
		return nil, err
	}
	m := &middleware{rules: checked, header: checked.header(), keys: keys, fingerprint: s.fingerprint}
	if m.fingerprint == nil {
		m.fingerprint = func(r *http.Request, body []byte) ([]byte, error) {
			return Fingerprint(r.Method, pathWithQuery(r), body)
		}
	} else {
		// What the user's function returns is a payload, read as every binding reads one
		// (kept up to 1 KiB, else hashed), as the other languages' middlewares do.
		custom := m.fingerprint
		m.fingerprint = func(r *http.Request, body []byte) ([]byte, error) {
			payload, err := custom(r, body)
			if err != nil {
				return nil, err
			}
			return polylock.FingerprintOf(payload)
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(next, w, r) })
	}, nil
}

// pathWithQuery is the request target as the client sent it (`/orders?x=1`), as the
// other languages' middlewares read it; a target in another form (a proxy's absolute URL)
// is read as its path and query.
func pathWithQuery(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

type middleware struct {
	rules       *rules
	header      string
	keys        *polylock.Idempotency
	fingerprint func(*http.Request, []byte) ([]byte, error)
}

func (m *middleware) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	values := r.Header.Values(m.header)
	if len(values) == 0 || !m.rules.appliesTo(r.Method) {
		next.ServeHTTP(w, r)
		return
	}
	// Several fields of the header are one list (RFC 9110 section 5.3), which is no key.
	key, problem, err := keyOf(strings.Join(values, ", "))
	if err != nil {
		http.Error(w, "idempotency key: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if problem != "" {
		m.refuse(w, badKey, key, 0)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "could not read the request body", http.StatusBadRequest)
		}
		return
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	fingerprint, err := m.fingerprint(r, body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		http.Error(w, "idempotency fingerprint: "+err.Error(), http.StatusInternalServerError)
		return
	}
	began, err := m.keys.Begin(r.Context(), key, fingerprint)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away
		}
		http.Error(w, "the idempotency store is unavailable; retry later", http.StatusServiceUnavailable)
		return
	}
	switch began.Outcome {
	case polylock.Replay:
		stored, err := decode(began.Response)
		if err != nil {
			http.Error(w, "idempotency key: "+err.Error(), http.StatusInternalServerError)
			return
		}
		write(w, stored, true)
	case polylock.InProgress:
		m.refuse(w, inProgress, key, began.RetryAfter)
	case polylock.Mismatch:
		m.refuse(w, mismatch, key, 0)
	default:
		m.run(next, w, r, began.Ticket)
	}
}

// run runs the handler for the attempt that holds the ticket, and stores its response (or
// gives the key up).
func (m *middleware) run(next http.Handler, w http.ResponseWriter, r *http.Request, ticket *polylock.Ticket) {
	ctx := context.WithoutCancel(r.Context())
	finished := false
	defer func() {
		if !finished {
			// The handler panicked (or called runtime.Goexit): the key is given up, so the
			// next attempt runs; the panic goes on.
			_ = ticket.Abandon(ctx)
		}
	}()
	rec := &recorder{w: w}
	next.ServeHTTP(rec, r)
	finished = true
	if !rec.wrote {
		rec.snapshot(http.StatusOK)
	}
	if !stores(rec.status) {
		_ = ticket.Abandon(ctx)
		return
	}
	stored, err := encode(response{status: rec.status, headers: flatten(rec.header), body: rec.body.Bytes()})
	if err != nil {
		_ = ticket.Abandon(ctx)
		return
	}
	// ErrLost: another attempt took the key over meanwhile (its result stands); the client
	// has this response already either way.
	_ = ticket.Complete(ctx, stored)
}

func (m *middleware) refuse(w http.ResponseWriter, why refusal, key string, retryAfter time.Duration) {
	answer, err := refusalResponse(why, key, retryAfter)
	if err != nil {
		http.Error(w, "idempotency key: "+err.Error(), http.StatusInternalServerError)
		return
	}
	write(w, answer, false)
}

// write sends a stored or refusal response.
func write(w http.ResponseWriter, answer response, replayed bool) {
	h := w.Header()
	for _, field := range answer.headers {
		h.Add(field.name, field.value)
	}
	if replayed {
		h.Set(replayedHeader, "true")
	}
	w.WriteHeader(answer.status)
	_, _ = w.Write(answer.body)
}

// flatten is a header map as (name, value) pairs, names in order, values in their order;
// trailers announced with http.TrailerPrefix are not part of the response's head.
func flatten(h http.Header) []header {
	names := make([]string, 0, len(h))
	for name := range h {
		if !strings.HasPrefix(name, http.TrailerPrefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []header
	for _, name := range names {
		for _, value := range h[name] {
			out = append(out, header{name, value})
		}
	}
	return out
}

// recorder passes the handler's response through to the client and keeps a copy: the
// status and headers as they were when the head was written, and the body.
type recorder struct {
	w      http.ResponseWriter
	wrote  bool
	status int
	header http.Header
	body   bytes.Buffer
}

func (rec *recorder) snapshot(status int) {
	rec.wrote, rec.status, rec.header = true, status, rec.w.Header().Clone()
}

func (rec *recorder) Header() http.Header { return rec.w.Header() }

func (rec *recorder) WriteHeader(status int) {
	// 1xx (103 Early Hints) are interim: the final status comes later.
	if !rec.wrote && (status >= 200 || status == http.StatusSwitchingProtocols) {
		rec.snapshot(status)
	}
	rec.w.WriteHeader(status)
}

func (rec *recorder) Write(p []byte) (int, error) {
	if !rec.wrote {
		rec.WriteHeader(http.StatusOK)
	}
	rec.body.Write(p)
	return rec.w.Write(p)
}

// Flush passes a flush through (streaming handlers); the copy is stored at the end.
func (rec *recorder) Flush() {
	if !rec.wrote {
		rec.WriteHeader(http.StatusOK)
	}
	if flusher, ok := rec.w.(http.Flusher); ok {
		flusher.Flush()
	}
}

// Unwrap lets http.ResponseController reach the client's writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.w }
