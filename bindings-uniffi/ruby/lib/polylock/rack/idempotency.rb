# frozen_string_literal: true

require 'stringio'

module Polylock
  # Rack middlewares (no dependency on the rack gem: they speak the Rack protocol).
  module Rack
    # `Idempotency-Key` for any Rack application (Rails, Sinatra, Hanami, Roda, a config.ru):
    #
    #   use Polylock::Rack::Idempotency, client: client   # or a URL; header:, lifetime:, methods:
    #
    # A POST or PATCH carrying `Idempotency-Key` runs once per key: its response (status,
    # headers, body) is stored, and a retry with the same key and request gets it again with
    # `Idempotent-Replayed: true`. A retry with the same key and another request gets 422; one
    # that arrives while the first runs gets 409 with `Retry-After`; a malformed key gets 400
    # (each an `application/problem+json` document). A server error (5xx) is not stored, so a
    # retry runs again; an app that raises abandons the key and the exception goes on.
    # Requests without the header, or of other methods, pass through untouched.
    #
    # The rules are the core's (polylock::kit::http_idempotency), as are the records: the
    # Python (ASGI, Django), Node (Express, Fastify) and Go (net/http) middlewares on the same
    # store and namespace replay what this one stored, and it replays theirs.
    #
    # The request body is read whole before the app runs (it is part of the fingerprint) and
    # handed to the app as a rewindable `rack.input`; the response body is read whole before
    # it is stored and sent.
    class Idempotency
      # Keys of this namespace unless told otherwise: the same in every language, so services
      # behind one store replay each other's responses.
      DEFAULT_NAMESPACE = 'http'

      # A request as a `fingerprint:` function sees it, in every language's middleware:
      # `method` (upper case), `path` (with `?` and the query, as sent), `headers` (an Array of
      # [name, value], names lower case), `body` (a binary String), and Rack's `env`.
      RequestInfo = Struct.new(:method, :path, :headers, :body, :env)

      # client: a Polylock::Client, a URL (connected at the first request of each process, so
      # that a forked worker connects its own), or nil ($POLYLOCK_URL, else the default URL).
      # header (default "Idempotency-Key"), lifetime (seconds a stored response replays,
      # default 86400), methods (default %w[POST PATCH]): checked by the core.
      # fingerprint: a callable given a RequestInfo, returning the payload that identifies the
      # request (a String, or a Hash/Array as Idempotency#begin reads it); default: the core's
      # hash of method, path and body. namespace: of the idempotency keys (default "http").
      # Error::InvalidArgument for an option that is wrong.
      def initialize(app, client: nil, header: nil, lifetime: nil, methods: nil, fingerprint: nil,
                     namespace: DEFAULT_NAMESPACE)
        @app = app
        @options = Idempotency.native_options(header, lifetime, methods)
        unless fingerprint.nil? || fingerprint.respond_to?(:call)
          raise Error::InvalidArgument,
                "idempotency middleware option 'fingerprint' must respond to call (a Proc of the request), got #{fingerprint.inspect}"
        end
        raise Error::InvalidArgument, "idempotency middleware option 'namespace' must be a String, got #{namespace.inspect}" \
          unless namespace.is_a?(String)
        unless client.nil? || client.is_a?(String) || client.is_a?(Polylock::Client)
          raise Error::InvalidArgument,
                "idempotency middleware option 'client' must be a Polylock::Client, a URL or nil, got #{client.class}"
        end

        @fingerprint = fingerprint
        @namespace = namespace
        @client = client
        @env_key = Idempotency.env_key(@options.header)
        @replayed_header = PolylockUniffi.http_replayed_header.downcase
        @keys = nil
        @keys_pid = nil
        @connect = Mutex.new
      end

      def call(env)
        method = env['REQUEST_METHOD'].to_s
        value = env[@env_key]
        return @app.call(env) if value.nil? || !@options.applies_to(method)

        key = PolylockUniffi.http_key_of(Idempotency.latin1(value))
        return respond(refusal('bad_key', key)) unless PolylockUniffi.http_key_problem(key).nil?

        body = read_body(env)
        began = keys.begin(key, fingerprint_of(env, method.upcase, body))
        case began.outcome
        when :acquired then run(env, began.ticket)
        when :replay then respond(Native.call { PolylockUniffi.http_decode_response(began.response) }, replayed: true)
        when :in_progress then respond(refusal('in_progress', key, began.retry_after))
        else respond(refusal('mismatch', key))
        end
      end

      # The idempotency keys the middleware uses (Client#idempotency of its namespace, kept
      # for its lifetime).
      def keys
        return @keys if @keys && @keys_pid == Process.pid

        @connect.synchronize do
          unless @keys && @keys_pid == Process.pid
            client = @client.is_a?(Polylock::Client) ? @client : Polylock.connect(@client)
            @keys = client.idempotency(@namespace, retention: @options.lifetime_seconds)
            @keys_pid = Process.pid
          end
        end
        @keys
      end

      # The core's checked options (Error::InvalidArgument naming the one that is wrong).
      def self.native_options(header, lifetime, methods)
        unless header.nil? || header.is_a?(String) || header.is_a?(Symbol)
          raise Error::InvalidArgument, "idempotency middleware option 'header' must be a String, got #{header.inspect}"
        end
        unless lifetime.nil? || lifetime.is_a?(Numeric)
          raise Error::InvalidArgument, "idempotency middleware option 'lifetime' must be seconds (a number), got #{lifetime.inspect}"
        end
        unless methods.nil? || (methods.is_a?(Array) && methods.all? { |m| m.is_a?(String) || m.is_a?(Symbol) })
          raise Error::InvalidArgument,
                "idempotency middleware option 'methods' must be an Array of methods such as %w[POST PATCH], got #{methods.inspect}"
        end

        Native.call { PolylockUniffi::HttpIdempotencyOptions.new(header&.to_s, lifetime&.to_f, methods&.map(&:to_s)) }
      end

      # Text of the request line or a header as HTTP has it: bytes read as ISO-8859-1 (as the
      # other languages' middlewares read them), given to the core as UTF-8.
      def self.latin1(text)
        text.to_s.dup.force_encoding(Encoding::ISO_8859_1).encode(Encoding::UTF_8)
      end

      # Where Rack's env keeps a request header: HTTP_ and the name upper case, '-' as '_'
      # (CONTENT_TYPE and CONTENT_LENGTH without the prefix).
      def self.env_key(header)
        name = header.upcase.tr('-', '_')
        %w[CONTENT_TYPE CONTENT_LENGTH].include?(name) ? name : "HTTP_#{name}"
      end

      private

      # Run the app under `ticket`: store its response (not a 5xx), or abandon the key when it
      # raises (re-raised) or answers 5xx.
      def run(env, ticket)
        begin
          status, headers, body = @app.call(env)
          stored = body.respond_to?(:each) ? read_response_body(body) : nil
        rescue Exception # rubocop:disable Lint/RescueException -- abandon, then re-raise whatever it was
          abandon(ticket)
          raise
        end
        if stored.nil? # a Rack 3 streaming body (call, not each): it goes out as it is
          abandon(ticket)
          env['rack.errors']&.puts('polylock idempotency: a streaming response body (one that responds to call, ' \
                                   'not each) is not stored; a retry will run again')
          return [status, headers, body]
        end
        settle(env, ticket, Integer(status), headers, stored)
        [status, headers, [stored]]
      end

      def settle(env, ticket, status, headers, body)
        unless PolylockUniffi.http_stores(status)
          abandon(ticket)
          return
        end
        response = PolylockUniffi::HttpResponse.new(status: status, headers: header_pairs(headers), body: body)
        ticket.complete(Native.call { PolylockUniffi.http_encode_response(response) })
      rescue Polylock::Error => e
        # The app ran and answered: its response goes out; a retry will run it again.
        abandon(ticket)
        env['rack.errors']&.puts("polylock idempotency: a response was sent but not stored: #{e.class}: #{e.message}")
      end

      def abandon(ticket)
        ticket.abandon
      rescue Polylock::Error
        nil # the app's own outcome is the one that counts
      end

      # The whole request body (binary), put back as a rewindable rack.input for the app.
      def read_body(env)
        input = env['rack.input']
        return ''.b if input.nil?

        input.rewind if input.respond_to?(:rewind)
        body = (input.read || '').b
        env['rack.input'] = StringIO.new(body)
        body
      end

      # The whole response body (a binary String), closed as Rack requires.
      def read_response_body(body)
        parts = []
        body.each { |chunk| parts << chunk.to_s.b }
        parts.join.b
      ensure
        body.close if body.respond_to?(:close)
      end

      def fingerprint_of(env, method, body)
        path = Idempotency.latin1("#{env['SCRIPT_NAME']}#{env['PATH_INFO']}")
        query = Idempotency.latin1(env['QUERY_STRING'])
        path = "#{path}?#{query}" unless query.empty?
        if @fingerprint.nil?
          PolylockUniffi.http_fingerprint(method, path, body)
        else
          Polylock::Idempotency.fingerprint(@fingerprint.call(RequestInfo.new(method, path, request_headers(env), body, env)))
        end
      end

      def request_headers(env)
        env.filter_map do |name, value|
          next unless value.is_a?(String)

          if name.start_with?('HTTP_')
            [name.delete_prefix('HTTP_').downcase.tr('_', '-'), value]
          elsif %w[CONTENT_TYPE CONTENT_LENGTH].include?(name)
            [name.downcase.tr('_', '-'), value]
          end
        end
      end

      # Rack's response headers as [name, value] pairs: a Rack 3 Array value, or a Rack 2
      # value of several lines, as one pair each.
      def header_pairs(headers)
        pairs = []
        headers.each do |name, value|
          values = value.is_a?(Array) ? value : value.to_s.split("\n")
          values.each { |one| pairs << PolylockUniffi::HttpHeader.new(name: name.to_s.downcase, value: one.to_s) }
        end
        pairs
      end

      def refusal(kind, key, retry_after = nil)
        Native.call { PolylockUniffi.http_refusal_response(kind, key, retry_after&.to_f) }
      end

      # A stored response or a refusal as a Rack response; a header given several times is an
      # Array (Rack 3) or lines (Rack 2).
      def respond(response, replayed: false)
        headers = {}
        response.headers.each do |header|
          (headers[header.name] ||= []) << header.value
        end
        headers[@replayed_header] = ['true'] if replayed
        multi = Idempotency.rack3?
        headers.transform_values! { |values| values.size == 1 ? values.first : (multi ? values : values.join("\n")) }
        [response.status, headers, [response.body.b]]
      end

      def self.rack3?
        defined?(::Rack::RELEASE) && Gem::Version.new(::Rack::RELEASE) >= Gem::Version.new('3')
      end
    end
  end
end
