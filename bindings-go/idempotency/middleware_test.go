package idempotency_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
	"example.invalid/polylock/bindings-go/idempotency"
)

// stores: SQLite always, and the running Redis when tests/services/services.sh env
// exported it.
func stores(t *testing.T) map[string]string {
	all := map[string]string{"sqlite": "sqlite://" + filepath.Join(t.TempDir(), "http.db")}
	if url := os.Getenv("POLYLOCK_TEST_REDIS_URL"); url != "" {
		all["redis"] = url
	}
	return all
}

func eachStore(t *testing.T, test func(t *testing.T, url string)) {
	for label, url := range stores(t) {
		t.Run(label, func(t *testing.T) {
			t.Parallel()
			test(t, url)
		})
	}
}

var counter atomic.Int64

// unique: namespaces and keys never repeat across runs sharing a server.
func unique(what string) string {
	return fmt.Sprintf("go-http-%s-%d-%d-%d", what, os.Getpid(), time.Now().UnixNano(), counter.Add(1))
}

func connect(t *testing.T, url string) *polylock.Client {
	t.Helper()
	client, err := polylock.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// server is an httptest server whose handler is wrapped by the middleware.
func server(t *testing.T, client *polylock.Client, handler http.Handler, options ...idempotency.Option) *httptest.Server {
	t.Helper()
	wrap, err := idempotency.Middleware(client, options...)
	if err != nil {
		t.Fatalf("middleware: %v", err)
	}
	s := httptest.NewServer(wrap(handler))
	t.Cleanup(s.Close)
	return s
}

type answer struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, method, url, key, body string) answer {
	t.Helper()
	a, err := do(method, url, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return a
}

// do sends one request (from any goroutine).
func do(method, url, key, body string) (answer, error) {
	request, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if key != "" {
		request.Header.Set("Idempotency-Key", key)
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return answer{}, err
	}
	defer response.Body.Close()
	text, err := io.ReadAll(response.Body)
	return answer{response.StatusCode, response.Header, string(text)}, err
}

// orders answers 201 with the request's body echoed and a count of its runs.
type orders struct{ runs atomic.Int64 }

func (o *orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := o.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Run", fmt.Sprint(n))
	w.Header().Add("Set-Cookie", "a=1")
	w.Header().Add("Set-Cookie", "b=2")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"run":%d,"got":%q}`, n, body)
}

func TestReplayMismatchAndBadKeys(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		handler := &orders{}
		namespace := unique("ns")
		client := connect(t, url)
		s := server(t, client, handler, idempotency.WithNamespace(namespace))
		key := unique("key")

		first := send(t, "POST", s.URL+"/orders?x=1", key, `{"amount":10}`)
		if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %v", first.status, first.header)
		}
		if first.body != `{"run":1,"got":"{\"amount\":10}"}` {
			t.Fatalf("first body %q", first.body)
		}
		// The same request again (the quoted form of the key is the same key): the stored
		// response, marked, without running the handler.
		again := send(t, "POST", s.URL+"/orders?x=1", `"`+key+`"`, `{"amount":10}`)
		if again.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %q %v", again.status, again.body, again.header)
		}
		if again.header.Get("X-Run") != "1" || again.header.Get("Content-Type") != "application/json" {
			t.Fatalf("replayed headers: %v", again.header)
		}
		if cookies := again.header.Values("Set-Cookie"); len(cookies) != 2 || cookies[0] != "a=1" || cookies[1] != "b=2" {
			t.Fatalf("replayed cookies: %v", cookies)
		}
		// Another body, path or query under the same key: 422, nothing run.
		for _, other := range []struct{ path, body string }{
			{"/orders?x=1", `{"amount":11}`}, {"/orders", `{"amount":10}`}, {"/refunds?x=1", `{"amount":10}`},
		} {
			refused := send(t, "POST", s.URL+other.path, key, other.body)
			if refused.status != 422 || refused.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%v: %d %v", other, refused.status, refused.header)
			}
			var problem map[string]any
			if err := json.Unmarshal([]byte(refused.body), &problem); err != nil || problem["status"] != 422.0 {
				t.Fatalf("422 body %q (%v)", refused.body, err)
			}
		}
		// Keys that are no keys: 400, nothing run.
		for _, bad := range []string{"two words", strings.Repeat("k", 256), "caf\u00e9"} {
			refused := send(t, "POST", s.URL+"/orders", bad, `{}`)
			if refused.status != 400 || !strings.Contains(refused.body, `"status":400`) {
				t.Fatalf("key %q: %d %q", bad, refused.status, refused.body)
			}
		}
		if runs := handler.runs.Load(); runs != 1 {
			t.Fatalf("the handler ran %d times, want 1", runs)
		}

		// The record is the core's stored form, the one every language's middleware
		// writes: the step-by-step primitive on the same namespace replays it.
		keys, err := client.Idempotency(namespace)
		if err != nil {
			t.Fatal(err)
		}
		fingerprint, err := idempotency.Fingerprint("POST", "/orders?x=1", []byte(`{"amount":10}`))
		if err != nil {
			t.Fatal(err)
		}
		began, err := keys.Begin(context.Background(), key, fingerprint)
		if err != nil || began.Outcome != polylock.Replay {
			t.Fatalf("begin on the middleware's record: %v %v", began, err)
		}
		if began.Response[0] != 'j' {
			t.Fatalf("stored form %q", began.Response)
		}
		var stored struct {
			Status  int        `json:"status"`
			Headers [][]string `json:"headers"`
			Body    string     `json:"body"`
		}
		if err := json.Unmarshal(began.Response[1:], &stored); err != nil {
			t.Fatalf("stored JSON %q: %v", began.Response, err)
		}
		body, _ := base64.StdEncoding.DecodeString(stored.Body)
		if stored.Status != 201 || string(body) != first.body {
			t.Fatalf("stored %+v", stored)
		}
		for _, h := range stored.Headers {
			if h[0] == "date" || h[0] == "content-length" || h[0] != strings.ToLower(h[0]) {
				t.Fatalf("stored header %v", h)
			}
		}
	})
}

func TestConcurrentRequestIs409(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		entered, release := make(chan struct{}), make(chan struct{})
		var runs atomic.Int64
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			close(entered)
			<-release
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte("done"))
		})
		s := server(t, connect(t, url), handler, idempotency.WithNamespace(unique("ns")))
		key := unique("key")
		type result struct {
			answer
			err error
		}
		firstDone := make(chan result, 1)
		go func() {
			a, err := do("POST", s.URL+"/jobs", key, "x")
			firstDone <- result{a, err}
		}()
		<-entered
		busy := send(t, "POST", s.URL+"/jobs", key, "x")
		if busy.status != 409 || busy.header.Get("Retry-After") == "" {
			t.Fatalf("while running: %d %v", busy.status, busy.header)
		}
		if busy.header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("409 headers %v", busy.header)
		}
		close(release)
		if first := <-firstDone; first.err != nil || first.status != 202 || first.body != "done" {
			t.Fatalf("first: %d %q %v", first.status, first.body, first.err)
		}
		after := send(t, "POST", s.URL+"/jobs", key, "x")
		if after.status != 202 || after.body != "done" || after.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("after: %d %q %v", after.status, after.body, after.header)
		}
		if runs.Load() != 1 {
			t.Fatalf("ran %d times", runs.Load())
		}
	})
}

func TestServerErrorsAreNotStoredAndPanicsAbandon(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		var runs atomic.Int64
		// Run 1 fails with 503, run 2 panics, run 3 succeeds.
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch runs.Add(1) {
			case 1:
				http.Error(w, "try again", http.StatusServiceUnavailable)
			case 2:
				panic("handler failed")
			default:
				_, _ = w.Write([]byte("ok"))
			}
		})
		wrap, err := idempotency.Middleware(connect(t, url), idempotency.WithNamespace(unique("ns")))
		if err != nil {
			t.Fatal(err)
		}
		wrapped := wrap(handler)
		key := unique("key")
		serve := func() *httptest.ResponseRecorder {
			request := httptest.NewRequest("POST", "/pay", strings.NewReader("amount=5"))
			request.Header.Set("Idempotency-Key", key)
			recorder := httptest.NewRecorder()
			wrapped.ServeHTTP(recorder, request)
			return recorder
		}
		if failed := serve(); failed.Code != 503 {
			t.Fatalf("run 1: %d", failed.Code)
		}
		// The 503 was not stored: the retry runs, and panics; the panic goes on.
		recovered := func() (p any) {
			defer func() { p = recover() }()
			serve()
			return nil
		}()
		if recovered != "handler failed" {
			t.Fatalf("the handler's panic did not go on: %v", recovered)
		}
		// The panicking attempt gave the key up: the next one runs at once (no 409).
		if ok := serve(); ok.Code != 200 || ok.Body.String() != "ok" || ok.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("run 3: %d %q", ok.Code, ok.Body.String())
		}
		if replay := serve(); replay.Code != 200 || replay.Body.String() != "ok" ||
			replay.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %q", replay.Code, replay.Body.String())
		}
		if runs.Load() != 3 {
			t.Fatalf("ran %d times, want 3", runs.Load())
		}
	})
}

func TestPassThrough(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		handler := &orders{}
		s := server(t, connect(t, url), handler, idempotency.WithNamespace(unique("ns")))
		key := unique("key")
		// A method the middleware does not apply to, with a key; POST without a key.
		for i := 0; i < 2; i++ {
			for _, a := range []answer{send(t, "GET", s.URL+"/orders", key, ""), send(t, "POST", s.URL+"/orders", "", "{}")} {
				if a.status != 201 || a.header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("passed through: %d %v", a.status, a.header)
				}
			}
		}
		if runs := handler.runs.Load(); runs != 4 {
			t.Fatalf("ran %d times, want 4", runs)
		}
	})
}

func TestReplayAcrossServers(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		// Two servers, each with its own client and middleware, one namespace: a retry that
		// lands on the other server gets the first one's response.
		namespace := unique("ns")
		a, b := &orders{}, &orders{}
		serverA := server(t, connect(t, url), a, idempotency.WithNamespace(namespace))
		serverB := server(t, connect(t, url), b, idempotency.WithNamespace(namespace))
		key := unique("key")
		first := send(t, "POST", serverA.URL+"/orders", key, "n=1")
		retried := send(t, "POST", serverB.URL+"/orders", key, "n=1")
		if first.status != 201 || retried.status != 201 || retried.body != first.body ||
			retried.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("A: %d %q; B: %d %q %v", first.status, first.body, retried.status, retried.body, retried.header)
		}
		if a.runs.Load() != 1 || b.runs.Load() != 0 {
			t.Fatalf("runs: A %d, B %d", a.runs.Load(), b.runs.Load())
		}
		// Another namespace is another set of keys.
		other := server(t, connect(t, url), b, idempotency.WithNamespace(unique("ns")))
		if fresh := send(t, "POST", other.URL+"/orders", key, "n=1"); fresh.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("another namespace replayed: %v", fresh.header)
		}
	})
}

func TestOptions(t *testing.T) {
	client := connect(t, "sqlite://"+filepath.Join(t.TempDir(), "options.db"))
	for name, options := range map[string][]idempotency.Option{
		"header":      {idempotency.WithHeader("Bad Header")},
		"lifetime":    {idempotency.WithLifetime(0)},
		"negative":    {idempotency.WithLifetime(-time.Second)},
		"methods":     {idempotency.WithMethods()},
		"method":      {idempotency.WithMethods("GE T")},
		"fingerprint": {idempotency.WithFingerprint(nil)},
		"namespace":   {idempotency.WithNamespace("")},
	} {
		if _, err := idempotency.Middleware(client, options...); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}

	// Another header and method; a fingerprint of the path alone (the body may change).
	handler := &orders{}
	s := server(t, client, handler, idempotency.WithHeader("X-Request-Key"), idempotency.WithMethods("put"),
		idempotency.WithLifetime(time.Hour), idempotency.WithNamespace(unique("ns")),
		idempotency.WithFingerprint(func(r *http.Request, body []byte) ([]byte, error) {
			return []byte(r.URL.Path), nil
		}))
	key := unique("key")
	put := func(body string) answer {
		request, _ := http.NewRequest("PUT", s.URL+"/items/1", strings.NewReader(body))
		request.Header.Set("X-Request-Key", key)
		response, err := http.DefaultClient.Do(request)
		if err != nil {
			t.Fatal(err)
		}
		defer response.Body.Close()
		text, _ := io.ReadAll(response.Body)
		return answer{response.StatusCode, response.Header, string(text)}
	}
	first, second := put("v1"), put("v2")
	if first.status != 201 || second.body != first.body || second.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("PUT: %d %q, then %q %v", first.status, first.body, second.body, second.header)
	}
	// POST is not in the list, and the default header carries no key here.
	send(t, "POST", s.URL+"/items/1", key, "v3")
	if runs := handler.runs.Load(); runs != 2 {
		t.Fatalf("ran %d times, want 2", runs)
	}
}
