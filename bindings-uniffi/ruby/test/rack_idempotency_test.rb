# frozen_string_literal: true

require_relative 'test_helper'
require 'json'
require 'open3'
require 'rack'
require 'rack/lint'
require 'rack/mock'

# Polylock::Rack::Idempotency with real Rack (Rack::MockRequest, Rack::Lint on both sides of
# the middleware), on SQLite and Redis: run once and replay, 422 for another request, 409
# while the first runs, 400 for a bad key, 5xx and exceptions not stored, options checked by
# the core, and records shared with the Python middleware (when a Python with the polylock
# wheel is given, as run-tests.sh does).
class RackIdempotencyTest < Minitest::Test
  # An app that counts its runs and answers 201 with two cookies, or what `answer` returns.
  class Counter
    attr_reader :runs

    def initialize(&answer)
      @runs = 0
      @mutex = Mutex.new
      @answer = answer
    end

    def call(env)
      run = @mutex.synchronize { @runs += 1 }
      body = env['rack.input'].read
      return @answer.call(env, run, body) if @answer

      [201, { 'content-type' => 'application/json', 'set-cookie' => "a=1\nb=2" },
       [%({"run":#{run},), %("body":#{body.to_json}})]]
    end
  end

  def each_backend
    TestSupport.backends.slice('sqlite', 'redis').each do |backend, url|
      Polylock.connect(url) do |client|
        yield client, backend, url
      rescue Minitest::Assertion => e
        raise e.class, "#{backend}: #{e.message}"
      end
    end
  end

  def mock(app, client, **options)
    inner = ::Rack::Lint.new(app)
    Rack::MockRequest.new(::Rack::Lint.new(Polylock::Rack::Idempotency.new(inner, client: client, **options)))
  end

  def post(request, key, body = '{"amount":100}', path: '/charges', method: 'POST', header: 'HTTP_IDEMPOTENCY_KEY')
    env = { method: method, input: body, 'CONTENT_TYPE' => 'application/json' }
    env[header] = key unless key.nil?
    request.request(method, path, env)
  end

  def test_the_first_request_runs_and_a_retry_replays_it
    each_backend do |client, _|
      app = Counter.new
      request = mock(app, client)
      key = SecureRandom.uuid
      first = post(request, key)
      assert_equal 201, first.status
      assert_nil first['idempotent-replayed']
      retry_ = post(request, key)
      assert_equal 1, app.runs
      assert_equal [201, first.body, 'true'], [retry_.status, retry_.body, retry_['idempotent-replayed']]
      assert_equal 'application/json', retry_['content-type']
      assert_equal "a=1\nb=2", retry_['set-cookie'], 'both cookies, in their order (Rack 2: lines)'
      assert_equal '{"run":1,"body":"{\"amount\":100}"}', retry_.body

      # The quoted form of the draft is the same key.
      assert_equal 'true', post(request, %("#{key}"))['idempotent-replayed']
      # Without a key, or with a method it does not apply to: untouched, every time.
      post(request, nil)
      post(request, nil)
      post(request, key, method: 'PUT')
      assert_equal 4, app.runs
    end
  end

  def test_another_request_with_the_key_is_422_and_a_bad_key_400
    each_backend do |client, _|
      app = Counter.new
      request = mock(app, client)
      key = SecureRandom.uuid
      post(request, key, path: '/charges?currency=eur')
      [
        post(request, key, '{"amount":999}', path: '/charges?currency=eur'),
        post(request, key, path: '/charges?currency=usd'),
        post(request, key, path: '/charges?currency=eur', method: 'PATCH')
      ].each do |other|
        assert_equal 422, other.status
        assert_equal 'application/problem+json', other['content-type']
        problem = JSON.parse(other.body)
        assert_equal 422, problem['status']
        assert_includes problem['detail'], key
      end
      ['', 'has space', 'k' * 256, "caf\u00e9".b].each do |bad|
        refused = post(request, bad)
        assert_equal 400, refused.status, bad
        assert_equal 400, JSON.parse(refused.body)['status']
      end
      assert_equal 1, app.runs
    end
  end

  def test_a_retry_while_the_first_runs_is_409_with_retry_after
    each_backend do |client, _|
      started = Queue.new
      finish = Queue.new
      app = Counter.new do |_, _, _|
        started << true
        finish.pop
        [200, { 'content-type' => 'text/plain' }, ['done']]
      end
      request = mock(app, client)
      key = SecureRandom.uuid
      first = Thread.new { post(request, key) }
      started.pop
      busy = post(request, key)
      finish << true
      assert_equal 409, busy.status
      assert_operator Integer(busy['retry-after']), :>=, 1
      assert_equal 'application/problem+json', busy['content-type']
      assert_equal 'done', first.value.body
      assert_equal 'done', post(request, key).body
      assert_equal 1, app.runs
    end
  end

  def test_server_errors_and_exceptions_are_not_stored
    each_backend do |client, _|
      app = Counter.new do |_, run, _|
        raise IOError, 'the database went away' if run == 1
        next [503, { 'content-type' => 'text/plain' }, ['busy']] if run == 2

        [201, { 'content-type' => 'text/plain' }, ["created on run #{run}"]]
      end
      request = mock(app, client)
      key = SecureRandom.uuid
      error = assert_raises(IOError) { post(request, key) }
      assert_equal 'the database went away', error.message
      assert_equal 503, post(request, key).status, 'the key was abandoned: the retry ran'
      assert_equal 'created on run 3', post(request, key).body, 'a 5xx is not stored'
      replay = post(request, key)
      assert_equal ['created on run 3', 'true'], [replay.body, replay['idempotent-replayed']]
      assert_equal 3, app.runs
    end
  end

  def test_options_header_methods_lifetime_namespace_and_fingerprint
    each_backend do |client, _|
      app = Counter.new
      # The payload is the path alone: another body is the same request.
      request = mock(app, client, header: 'X-Request-Id', methods: %i[put], lifetime: 60,
                                  namespace: TestSupport.unique('ns'), fingerprint: ->(r) { { 'path' => r.path } })
      key = SecureRandom.uuid
      post(request, key, method: 'PUT', header: 'HTTP_X_REQUEST_ID')
      replay = post(request, key, '{"amount":1}', method: 'PUT', header: 'HTTP_X_REQUEST_ID')
      assert_equal 'true', replay['idempotent-replayed']
      post(request, key, method: 'POST', header: 'HTTP_X_REQUEST_ID') # not in methods
      post(request, key, method: 'PUT') # Idempotency-Key is not the header now
      assert_equal 3, app.runs

      seen = nil
      request = mock(app, client, fingerprint: lambda { |r|
        seen = r
        r.body
      })
      post(request, SecureRandom.uuid, 'payload', path: '/p?q=1')
      assert_equal ['POST', '/p?q=1', 'payload'], [seen.method, seen.path, seen.body]
      assert_includes seen.headers, %w[content-type application/json]
      assert_kind_of Hash, seen.env
    end
  end

  def test_bad_options_are_typed_errors
    client = Polylock.connect(TestSupport.backends.fetch('sqlite'))
    app = Counter.new
    {
      { header: 'Bad Header' } => /header/,
      { header: 42 } => /header/,
      { lifetime: 0 } => /lifetime/,
      { lifetime: -1 } => /lifetime/,
      { lifetime: '1 day' } => /lifetime/,
      { methods: [] } => /methods/,
      { methods: 'POST' } => /methods/,
      { methods: ['GE T'] } => /methods/,
      { fingerprint: 'body' } => /fingerprint/,
      { namespace: :http } => /namespace/,
      { client: 42 } => /client/
    }.each do |options, message|
      error = assert_raises(Polylock::Error::InvalidArgument, options.inspect) do
        Polylock::Rack::Idempotency.new(app, **{ client: client }.merge(options))
      end
      assert_match message, error.message
    end
    assert_raises(ArgumentError) { Polylock::Rack::Idempotency.new(app, client: client, headers: 'X') }
  ensure
    client&.close
  end

  def test_a_url_client_is_connected_at_the_first_request
    url = TestSupport.backends.fetch('sqlite')
    app = Counter.new
    request = Rack::MockRequest.new(::Rack::Lint.new(Polylock::Rack::Idempotency.new(::Rack::Lint.new(app), client: url)))
    key = SecureRandom.uuid
    2.times { post(request, key) }
    assert_equal 1, app.runs
  end

  # The Python ASGI middleware on the same store: what it stored replays here byte for byte,
  # and what this stored replays there.
  PYTHON_ASGI = <<~PY
    import asyncio, json, sys
    from polylock.contrib.asgi import IdempotencyMiddleware

    url, key, body = sys.argv[1], sys.argv[2], sys.argv[3].encode()

    async def app(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": 201, "headers": [
            (b"content-type", b"application/json"), (b"set-cookie", b"a=1"), (b"set-cookie", b"b=2")]})
        await send({"type": "http.response.body", "body": b'{"from": "python", "bytes": "\\xc3\\xa9"}'})

    async def main():
        middleware = IdempotencyMiddleware(app, client=url)
        scope = {"type": "http", "method": "POST", "path": "/charges", "raw_path": b"/charges",
                 "query_string": b"x=1", "headers": [(b"idempotency-key", key.encode())]}
        given, sent = False, []
        async def receive():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)
        async def send(message):
            sent.append(message)
        await middleware(scope, receive, send)
        start = sent[0]
        print(json.dumps({"status": start["status"],
                          "headers": [[n.decode(), v.decode()] for n, v in start["headers"]],
                          "body": b"".join(m.get("body", b"") for m in sent[1:]).decode()}))

    asyncio.run(main())
  PY

  def python_post(url, key, body)
    python = ENV.fetch('POLYLOCK_TEST_PYTHON', '')
    skip 'POLYLOCK_TEST_PYTHON is not set (run-tests.sh sets it when a Python with polylock exists)' if python.empty?
    out, status = Open3.capture2(python, '-c', PYTHON_ASGI, url, key, body)
    assert_predicate status, :success?, out
    JSON.parse(out)
  end

  def test_records_are_shared_with_the_python_middleware
    each_backend do |client, _, url|
      app = Counter.new do |_, _, _|
        [201, { 'content-type' => 'application/json', 'set-cookie' => "a=1\nb=2" }, ['{"from": "ruby", "bytes": "é"}']]
      end
      request = mock(app, client)

      key = SecureRandom.uuid
      stored = python_post(url, key, '{"amount":100}')
      assert_equal 201, stored['status']
      replay = post(request, key, path: '/charges?x=1')
      assert_equal 0, app.runs, 'the Python response replays here'
      assert_equal [201, stored['body'].b, 'true'], [replay.status, replay.body, replay['idempotent-replayed']]
      assert_equal "a=1\nb=2", replay['set-cookie']
      assert_equal 422, post(request, key, '{"amount":5}', path: '/charges?x=1').status

      key = SecureRandom.uuid
      first = post(request, key, path: '/charges?x=1')
      replayed = python_post(url, key, '{"amount":100}')
      assert_equal 1, app.runs
      assert_equal [201, first.body], [replayed['status'], replayed['body'].b]
      assert_includes replayed['headers'], %w[idempotent-replayed true]
      assert_equal [%w[set-cookie a=1], %w[set-cookie b=2]], replayed['headers'].select { |n, _| n == 'set-cookie' }
    end
  end
end
