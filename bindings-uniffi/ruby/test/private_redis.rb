# frozen_string_literal: true

require 'socket'

# redis-servers of a test's own (no persistence, 127.0.0.1, ports above 30000), for RedLock's
# independent servers and for a server with a password of the test's choosing. Each is killed
# when the suite ends (Minitest.after_run), and may be paused with SIGSTOP meanwhile.
module PrivateRedis
  Server = Struct.new(:port, :pid, :password, keyword_init: true) do
    def url
      auth = password ? ":#{password}@" : ''
      "redis://#{auth}127.0.0.1:#{port}"
    end

    def signal(name)
      Process.kill(name, pid)
    end
  end

  @servers = []
  @next_port = 30_000 + ((Process.pid * 7) % 20_000)
  @mutex = Mutex.new

  # A new redis-server (requirepass `password` if given), answering PING; raises if none
  # could be started on any of 50 ports.
  def self.start(password: nil)
    @mutex.synchronize do
      50.times do
        port = (@next_port += 1)
        args = ['redis-server', '--port', port.to_s, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
        args += ['--requirepass', password] if password
        pid = Process.spawn(*args, out: File::NULL, err: File::NULL)
        if answers?(port, pid)
          server = Server.new(port: port, pid: pid, password: password)
          @servers << server
          return server
        end
        stop_pid(pid)
      end
      raise 'could not start a redis-server on any of 50 ports'
    end
  end

  def self.answers?(port, pid)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      return false if Process.waitpid(pid, Process::WNOHANG)

      begin
        TCPSocket.open('127.0.0.1', port) do |socket|
          socket.write("PING\r\n")
          # +PONG, or -NOAUTH with a password: either way this server is up.
          return true if socket.gets&.start_with?('+PONG', '-NOAUTH')
        end
      rescue SystemCallError
        nil
      end
      sleep 0.05
    end
    false
  end

  def self.stop_pid(pid)
    Process.kill('CONT', pid)
    Process.kill('KILL', pid)
    Process.wait(pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  Minitest.after_run { @servers.each { |server| stop_pid(server.pid) } }
end
