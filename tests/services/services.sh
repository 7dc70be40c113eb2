#!/usr/bin/env bash
# Start, stop and inspect the real servers that polylock's integration tests run against.
#
#   services.sh start  [SERVICE...]   install if needed, start, wait until answering, print URLs
#   services.sh stop   [SERVICE...]   stop (no-op when not running)
#   services.sh status [SERVICE...]   one line per service; exit 0 only if all are answering
#   services.sh url    SERVICE        print the service's URL
#   services.sh env                   `export POLYLOCK_TEST_<SERVICE>_URL=...` for running services
#
# SERVICE: redis redis-cluster redis-sentinel redis-tls redis-tls-cluster redis-tls-sentinel etcd
#          etcd-cluster etcd-tls zookeeper zookeeper-ensemble postgres mariadb (default: all).
#          See README.md beside this file.
#
# Adding a service NAME means adding one block of functions below:
#   svc_NAME_packages   print the Debian packages to install (nothing when already installed)
#   svc_NAME_launch     create its files under $(svc_dir NAME) and `spawn` its process(es)
#   svc_NAME_setup      optional: one-time setup once it runs (users, databases)
#   svc_NAME_ready      succeed when it answers a real request (polled)
#   svc_NAME_url        print the polylock URL
# plus its entries in SERVICES, SVC_PORTS and SVC_COMM (and SVC_STOP_SIGNAL if not TERM).
# A service may spawn several processes (one pid file each, e.g. node1.pid node2.pid):
# stop and status handle every *.pid file in the service's directory.
set -euo pipefail

readonly HOST=127.0.0.1
readonly BASE_DIR="${POLYLOCK_SERVICES_DIR:-/tmp/polylock-services}"
readonly READY_TIMEOUT="${POLYLOCK_SERVICES_TIMEOUT:-60}"
readonly STOP_TIMEOUT=30
readonly PG_BIN=/usr/lib/postgresql/15/bin
readonly PROG="${0##*/}"

# Every service, in start order. Services added later that should not start by default
# can go in KNOWN_SERVICES only.
SERVICES=(redis redis-cluster redis-sentinel redis-tls redis-tls-cluster redis-tls-sentinel etcd etcd-cluster etcd-tls
  zookeeper zookeeper-ensemble postgres mariadb)
KNOWN_SERVICES=("${SERVICES[@]}")

# TCP ports each service listens on (checked to be free before a start).
declare -A SVC_PORTS=(
  [redis]="16379"
  # Redis Cluster nodes also listen on their cluster bus port, client port + 10000.
  [redis-cluster]="17001 17002 17003 27001 27002 27003"
  [redis-sentinel]="16380 16381 26380"
  [redis-tls]="16390"
  # TLS only; the cluster bus over TLS too (client port + 10000).
  [redis-tls-cluster]="17101 17102 17103 27101 27102 27103"
  # TLS only: master 16391, sentinel 26391.
  [redis-tls-sentinel]="16391 26391"
  [etcd]="12379 12380"
  [etcd-cluster]="12479 12480 12579 12580 12679 12680"
  [etcd-tls]="12779 12780"
  [zookeeper]="12181"
  [zookeeper-ensemble]="12281 12282 12283 12381 12382 12383 12481 12482 12483"
  [postgres]="15432"
  [mariadb]="13306"
)
# Expected /proc/PID/comm of each server process: guards against a stale pid file whose
# pid has been reused by an unrelated process.
declare -A SVC_COMM=(
  [redis]=redis-server
  [redis-cluster]=redis-server
  # The sentinel too: it is redis-server started with --sentinel (redis-sentinel is only
  # a symlink to it, which would make the comm "redis-sentinel").
  [redis-sentinel]=redis-server
  [redis-tls]=redis-server
  [redis-tls-cluster]=redis-server
  [redis-tls-sentinel]=redis-server
  [etcd]=etcd
  [etcd-cluster]=etcd
  [etcd-tls]=etcd
  [zookeeper]=java
  [zookeeper-ensemble]=java
  [postgres]=postgres
  [mariadb]=mariadbd
)
# Signal that stops a server promptly. PostgreSQL's SIGTERM is "smart" shutdown, which
# waits for every client to disconnect; SIGINT is "fast" shutdown.
declare -A SVC_STOP_SIGNAL=(
  [postgres]=INT
)

# ---------------------------------------------------------------------------------------
# Small helpers

msg() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { msg "error: $*"; exit 1; }

# usage [EXIT_CODE]: print the header comment's synopsis.
usage() {
  sed -n '2,11s/^# \{0,1\}//p' "$0" >&2
  exit "${1:-2}"
}

svc_dir() { printf '%s/%s\n' "$BASE_DIR" "$1"; }

is_known() {
  local s
  for s in "${KNOWN_SERVICES[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}

# Run a per-service hook if the service defines it: call_hook NAME OP [ARGS...]
has_hook() { declare -F "svc_${1//-/_}_$2" >/dev/null; }
call_hook() {
  local name=$1 op=$2
  shift 2
  "svc_${name//-/_}_${op}" "$@"
}

# Succeeds while PID is a live (non-zombie) process whose comm is COMM.
pid_alive() {
  local pid=$1 comm=$2 stat
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ ${stat##*) } != Z* ]] || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]]
}

pid_files() { compgen -G "$(svc_dir "$1")/*.pid" || true; }

# Succeeds if every pid file of the service names a live server process (and there is one).
is_running() {
  local name=$1 f any=1
  while read -r f; do
    [[ -n $f ]] || continue
    pid_alive "$(<"$f")" "${SVC_COMM[$name]}" || return 1
    any=0
  done < <(pid_files "$name")
  return "$any"
}

port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# Close every fd above 2 in the current (sub)shell, so a spawned server keeps neither our
# lock file nor a pipe the caller passed us (a test runner waiting for EOF would hang).
close_inherited_fds() {
  local fds fd
  # List first, close after: the glob briefly opens a directory fd of its own.
  fds=(/proc/"$BASHPID"/fd/*)
  for fd in "${fds[@]##*/}"; do
    if ((fd > 2)); then exec {fd}>&-; fi
  done
}

# spawn PIDFILE LOGFILE CMD... : run CMD detached in its own session (so the caller's
# shell or terminal going away does not signal it), stdin from /dev/null, output to LOGFILE.
# A background job of a non-interactive shell is not a process-group leader, so setsid(1)
# calls setsid() and execs without forking: $! is the server's own pid.
spawn() {
  local pidfile=$1 log=$2
  shift 2
  (
    close_inherited_fds
    exec setsid "$@" </dev/null >>"$log" 2>&1
  ) &
  printf '%s\n' "$!" >"$pidfile"
}

log_tail() {
  local f
  for f in "$(svc_dir "$1")"/*.log; do
    [[ -f $f ]] || continue
    printf -- '----- last lines of %s -----\n' "$f" >&2
    tail -n 40 "$f" >&2
  done
}

# wait_until NAME DESCRIPTION CMD... : poll CMD until it succeeds, the service's process
# dies, or READY_TIMEOUT passes. Prints the log tail on failure.
wait_until() {
  local name=$1 what=$2 deadline=$((SECONDS + READY_TIMEOUT))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ! is_running "$name"; then
      msg "$name exited while waiting for $what"
      log_tail "$name"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      msg "$name: timed out after ${READY_TIMEOUT}s waiting for $what"
      log_tail "$name"
      return 1
    fi
    sleep 0.2
  done
}

# ---------------------------------------------------------------------------------------
# Installing packages

APT_UPDATED=0
POLICY_RC_CREATED=0
readonly POLICY_RC=/usr/sbin/policy-rc.d

cleanup() {
  if ((POLICY_RC_CREATED)); then rm -f "$POLICY_RC"; fi
}
trap cleanup EXIT

# The packages hooks call this for each package whose files are missing.
need_pkg() { printf '%s\n' "$1"; }

apt_install() {
  ((EUID == 0)) || die "must be root to install: $*"
  # Packages must not start their own default instance (on the default port, under
  # systemd/init): policy-rc.d exit code 101 tells invoke-rc.d "action forbidden".
  if [[ ! -e $POLICY_RC ]]; then
    printf '#!/bin/sh\n# created by polylock tests/services/services.sh\nexit 101\n' >"$POLICY_RC"
    chmod 755 "$POLICY_RC"
    POLICY_RC_CREATED=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ((!APT_UPDATED)); then
    msg "apt-get update"
    apt-get -q update >&2
    APT_UPDATED=1
  fi
  msg "installing: $*"
  # Wait for the dpkg lock rather than fail if another apt-get is running.
  apt-get -q -y --no-install-recommends -o DPkg::Lock::Timeout=600 install "$@" >&2
  cleanup
  POLICY_RC_CREATED=0
}

# Install what the given services lack, in one apt transaction.
install_missing() {
  local pkgs=() name
  for name in "$@"; do
    mapfile -t -O "${#pkgs[@]}" pkgs < <(call_hook "$name" packages)
  done
  if ((${#pkgs[@]})); then apt_install "${pkgs[@]}"; fi
}

# ---------------------------------------------------------------------------------------
# redis: redis-server + redis-cli. The other redis-* services below share these helpers.

# Options of every redis-server data node (not the sentinel). No config file: everything on
# the command line. No persistence (throwaway data). DEBUG is allowed from loopback so
# tests can stall a server (DEBUG SLEEP).
readonly REDIS_OPTS=(--bind "$HOST" --daemonize no --save '' --appendonly no
  --enable-debug-command local)

svc_redis_packages() {
  command -v redis-server >/dev/null || need_pkg redis-server
  command -v redis-cli >/dev/null || need_pkg redis-tools
}

# redis_node SERVICE NODE OPTION... : spawn one redis-server with its own data directory
# NODE/ and NODE.pid, NODE.log in the service's directory.
redis_node() {
  local dir node=$2
  dir=$(svc_dir "$1")
  shift 2
  mkdir -p "$dir/$node"
  spawn "$dir/$node.pid" "$dir/$node.log" \
    redis-server "${REDIS_OPTS[@]}" --dir "$dir/$node" "$@"
}

# redis_ping PORT: succeed if the plain-TCP redis on PORT answers PING.
redis_ping() { [[ $(redis-cli -h "$HOST" -p "$1" ping 2>/dev/null) == PONG ]]; }

svc_redis_launch() { redis_node redis server --port 16379; }

svc_redis_ready() { redis_ping 16379; }

svc_redis_url() { printf 'redis://%s:16379\n' "$HOST"; }

# ---------------------------------------------------------------------------------------
# redis-cluster: Redis Cluster of 3 masters, no replicas

readonly CLUSTER_PORTS=(17001 17002 17003)

svc_redis_cluster_packages() { svc_redis_packages; }

svc_redis_cluster_launch() {
  local i
  # A short node timeout, so tests that stall or stop a node see it marked failed quickly.
  for i in 1 2 3; do
    redis_node redis-cluster "node$i" --port "${CLUSTER_PORTS[i - 1]}" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000
  done
}

svc_redis_cluster_setup() {
  local port nodes=()
  for port in "${CLUSTER_PORTS[@]}"; do
    wait_until redis-cluster "the node on port $port" redis_ping "$port" || return 1
    nodes+=("$HOST:$port")
  done
  # Splits the 16384 slots evenly, makes the nodes meet and waits until they agree on the
  # slot map. It refuses nodes that already hold slots or keys, but every fresh start has
  # empty nodes.
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
    </dev/null >>"$(svc_dir redis-cluster)/cluster-create.log" 2>&1
}

svc_redis_cluster_ready() {
  local port info
  # Every node, not only the first: a client may bootstrap from any seed in the URL, and
  # a node's view converges over the cluster bus a moment after the others' does.
  for port in "${CLUSTER_PORTS[@]}"; do
    info=$(redis-cli -h "$HOST" -p "$port" cluster info 2>/dev/null) || return 1
    [[ $info =~ cluster_state:ok && $info =~ cluster_slots_assigned:16384 &&
      $info =~ cluster_slots_ok:16384 && $info =~ cluster_known_nodes:3[^0-9] ]] || return 1
  done
}

svc_redis_cluster_url() {
  printf 'redis+cluster://%s:%s,%s:%s,%s:%s\n' \
    "$HOST" "${CLUSTER_PORTS[0]}" "$HOST" "${CLUSTER_PORTS[1]}" "$HOST" "${CLUSTER_PORTS[2]}"
}

# ---------------------------------------------------------------------------------------
# redis-sentinel: master 16380, replica 16381, one sentinel on 26380 (quorum 1)

readonly SENTINEL_MASTER=polylock-master

svc_redis_sentinel_packages() { svc_redis_packages; }

svc_redis_sentinel_launch() {
  # Redis 7 sends the full sync diskless by default, after waiting 5 s for more replicas to
  # turn up: no delay, as there is only one. Both get it, as a failover swaps their roles.
  local opts=(--repl-diskless-sync-delay 0)
  redis_node redis-sentinel master --port 16380 "${opts[@]}"
  redis_node redis-sentinel replica --port 16381 "${opts[@]}" --replicaof "$HOST" 16380
}

# Succeeds once the replica has finished its initial sync with the master.
redis_replica_synced() {
  redis-cli -h "$HOST" -p 16381 info replication 2>/dev/null | grep -q '^master_link_status:up'
}

# The sentinel starts only once the replica is in sync: it learns of replicas from the
# master's INFO, which it asks for on connecting and then only every 10 s. Started before
# the replica had connected, it would take up to 10 s more to know of it.
svc_redis_sentinel_setup() {
  local dir
  dir=$(svc_dir redis-sentinel)
  wait_until redis-sentinel "the replica to sync" redis_replica_synced || return 1
  mkdir -p "$dir/sentinel"
  # A fresh file on every start: the sentinel rewrites its config file with what it learns
  # (replicas, failovers, its own id), and must be able to write it.
  cat >"$dir/sentinel.conf" <<EOC || return 1
bind $HOST
port 26380
daemonize no
dir "$dir/sentinel"
sentinel resolve-hostnames no
sentinel monitor $SENTINEL_MASTER $HOST 16380 1
sentinel down-after-milliseconds $SENTINEL_MASTER 2000
sentinel failover-timeout $SENTINEL_MASTER 5000
EOC
  spawn "$dir/sentinel.pid" "$dir/sentinel.log" \
    redis-server "$dir/sentinel.conf" --sentinel
  # Stricter than the ready check: right after a start, a failover must be able to pick
  # the replica, so the sentinel must have seen it in sync.
  wait_until redis-sentinel "the sentinel to see the replica in sync" \
    sentinel_sees_replica_synced
}

sentinel_cli() { redis-cli -h "$HOST" -p 26380 sentinel "$@" 2>/dev/null; }

# The sentinel's view of the replica: redis-cli prints the nested field/value lists one
# item a line. There is one replica. It is up if its flags are just "slave" (not s_down,
# not disconnected), and in sync if the master link it reported at its last INFO was up.
sentinel_replicas() { sentinel_cli replicas "$SENTINEL_MASTER"; }
sentinel_sees_replica() { [[ $(sentinel_replicas) == *$'\nflags\nslave\n'* ]]; }
sentinel_sees_replica_synced() {
  local r
  r=$(sentinel_replicas) || return 1
  [[ $r == *$'\nflags\nslave\n'* && $r == *$'\nmaster-link-status\nok\n'* ]]
}

svc_redis_sentinel_ready() {
  local addr
  addr=$(sentinel_cli get-master-addr-by-name "$SENTINEL_MASTER") || return 1
  # 16380 after a start; 16381 once a test has forced a failover (the old master then
  # becomes the replica), which should not make `start` or `status` fail.
  [[ $addr == "$HOST"$'\n'1638[01] ]] || return 1
  # Not "in sync" as in setup: after a failover the sentinel reconfigures the old master
  # only at its next INFO poll (every 10 s) and learns that it has synced at the one after,
  # so that would keep `status` failing and `start` waiting for some 20 s.
  sentinel_sees_replica
}

svc_redis_sentinel_url() { printf 'redis+sentinel://%s:26380/%s\n' "$HOST" "$SENTINEL_MASTER"; }

# ---------------------------------------------------------------------------------------
# redis-tls: TLS only (no plain port), server certificate from a throwaway CA, password

readonly TLS_PASSWORD=polylock-tls-secret

svc_redis_tls_packages() {
  svc_redis_packages
  command -v openssl >/dev/null || need_pkg openssl
}

# tls_make_certs DIR: a CA (DIR/ca.crt, the path the URL names) and a server certificate
# for 127.0.0.1 and localhost signed by it (DIR/tls/server.{key,crt}), and a client
# certificate for servers that ask for one (DIR/client.{crt,key}). P-256 keys: instant
# to generate, and accepted by rustls as well as OpenSSL. The extensions are spelled out,
# not taken from the host's openssl.cnf, as strict verifiers (webpki) insist on them:
# CA:TRUE on the CA only, SANs and serverAuth on the server certificate.
tls_make_certs() {
  local dir=$1 t=$1/tls
  mkdir -p "$t"
  cat >"$t/openssl.cnf" <<'EOC'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = polylock test CA
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOC
  {
    openssl req -x509 -new -config "$t/openssl.cnf" -extensions ca_ext \
      -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
      -keyout "$t/ca.key" -out "$dir/ca.crt" &&
      openssl req -new -config "$t/openssl.cnf" -subj /CN=localhost \
        -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$t/server.key" -out "$t/server.csr" &&
      openssl x509 -req -in "$t/server.csr" -CA "$dir/ca.crt" -CAkey "$t/ca.key" \
        -set_serial "0x$(openssl rand -hex 8)" -days 365 \
        -extfile "$t/openssl.cnf" -extensions server_ext -out "$t/server.crt" &&
      openssl req -new -config "$t/openssl.cnf" -subj /CN=polylock-client \
        -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$dir/client.key" -out "$t/client.csr" &&
      openssl x509 -req -in "$t/client.csr" -CA "$dir/ca.crt" -CAkey "$t/ca.key" \
        -set_serial "0x$(openssl rand -hex 8)" -days 365 \
        -extfile "$t/openssl.cnf" -extensions client_ext -out "$dir/client.crt"
  } >>"$dir/openssl.log" 2>&1 || { log_tail "${2:-redis-tls}"; die "${2:-redis-tls}: making certificates failed"; }
}

svc_redis_tls_launch() {
  local dir
  dir=$(svc_dir redis-tls)
  tls_make_certs "$dir"
  # --port 0 closes the plain port. Clients need no certificate of their own.
  redis_node redis-tls server --port 0 --tls-port 16390 \
    --tls-cert-file "$dir/tls/server.crt" --tls-key-file "$dir/tls/server.key" \
    --tls-ca-cert-file "$dir/ca.crt" --tls-auth-clients no --requirepass "$TLS_PASSWORD"
}

svc_redis_tls_ready() {
  [[ $(redis-cli --tls --cacert "$(svc_dir redis-tls)/ca.crt" -h "$HOST" -p 16390 \
    -a "$TLS_PASSWORD" --no-auth-warning ping 2>/dev/null) == PONG ]]
}

# url_escape STRING: percent-encode every byte but unreserved characters and '/'.
url_escape() {
  local LC_ALL=C s=$1 out='' c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
      [A-Za-z0-9/._~-]) out+=$c ;;
      *) printf -v c '%%%02X' "'$c" && out+=$c ;;
    esac
  done
  printf '%s\n' "$out"
}

svc_redis_tls_url() {
  printf 'rediss://:%s@%s:16390?ca=%s\n' \
    "$TLS_PASSWORD" "$HOST" "$(url_escape "$(svc_dir redis-tls)/ca.crt")"
}

# ---------------------------------------------------------------------------------------
# redis-tls-cluster: Redis Cluster of 3 masters, no replicas, TLS only (the cluster bus too),
# password; clients need no certificate of their own.

readonly TLS_CLUSTER_PORTS=(17101 17102 17103)

svc_redis_tls_cluster_packages() { svc_redis_tls_packages; }

# redis_tls_opts SERVICE: the TLS options of a TLS-only node of SERVICE (its certificates).
redis_tls_opts() {
  local dir
  dir=$(svc_dir "$1")
  printf '%s\n' --port 0 --tls-cert-file "$dir/tls/server.crt" --tls-key-file "$dir/tls/server.key" \
    --tls-ca-cert-file "$dir/ca.crt" --tls-client-cert-file "$dir/client.crt" \
    --tls-client-key-file "$dir/client.key" --requirepass "$TLS_PASSWORD" --masterauth "$TLS_PASSWORD"
}

# redis_tls_cli SERVICE PORT ARGS...: redis-cli over TLS to a node of SERVICE (with the
# client certificate, which servers that do not ask for one ignore).
redis_tls_cli() {
  local dir
  dir=$(svc_dir "$1")
  redis-cli --tls --cacert "$dir/ca.crt" --cert "$dir/client.crt" --key "$dir/client.key" \
    -h "$HOST" -p "$2" -a "$TLS_PASSWORD" --no-auth-warning "${@:3}"
}

redis_tls_ping() { [[ $(redis_tls_cli "$1" "$2" ping 2>/dev/null) == PONG ]]; }

svc_redis_tls_cluster_launch() {
  local i opts
  tls_make_certs "$(svc_dir redis-tls-cluster)" redis-tls-cluster
  mapfile -t opts < <(redis_tls_opts redis-tls-cluster)
  for i in 1 2 3; do
    redis_node redis-tls-cluster "node$i" "${opts[@]}" --tls-port "${TLS_CLUSTER_PORTS[i - 1]}" \
      --tls-cluster yes --tls-auth-clients no \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000
  done
}

svc_redis_tls_cluster_setup() {
  local port nodes=()
  for port in "${TLS_CLUSTER_PORTS[@]}"; do
    wait_until redis-tls-cluster "the node on port $port" redis_tls_ping redis-tls-cluster "$port" || return 1
    nodes+=("$HOST:$port")
  done
  redis_tls_cli redis-tls-cluster "${TLS_CLUSTER_PORTS[0]}" --cluster create "${nodes[@]}" \
    --cluster-replicas 0 --cluster-yes </dev/null >>"$(svc_dir redis-tls-cluster)/cluster-create.log" 2>&1
}

svc_redis_tls_cluster_ready() {
  local port info
  for port in "${TLS_CLUSTER_PORTS[@]}"; do
    info=$(redis_tls_cli redis-tls-cluster "$port" cluster info 2>/dev/null) || return 1
    [[ $info =~ cluster_state:ok && $info =~ cluster_slots_ok:16384 &&
      $info =~ cluster_known_nodes:3[^0-9] ]] || return 1
  done
}

svc_redis_tls_cluster_url() {
  printf 'rediss+cluster://:%s@%s:%s,%s:%s,%s:%s?ca=%s\n' "$TLS_PASSWORD" \
    "$HOST" "${TLS_CLUSTER_PORTS[0]}" "$HOST" "${TLS_CLUSTER_PORTS[1]}" "$HOST" "${TLS_CLUSTER_PORTS[2]}" \
    "$(url_escape "$(svc_dir redis-tls-cluster)/ca.crt")"
}

# ---------------------------------------------------------------------------------------
# redis-tls-sentinel: one master (16391) and one sentinel (26391) over it, both TLS only and
# both asking for a client certificate (DIR/client.{crt,key}) besides the password.

readonly TLS_SENTINEL_MASTER=polylock-tls-master

svc_redis_tls_sentinel_packages() { svc_redis_tls_packages; }

svc_redis_tls_sentinel_launch() {
  local dir opts
  dir=$(svc_dir redis-tls-sentinel)
  tls_make_certs "$dir" redis-tls-sentinel
  mapfile -t opts < <(redis_tls_opts redis-tls-sentinel)
  redis_node redis-tls-sentinel master "${opts[@]}" --tls-port 16391 --tls-auth-clients yes \
    --tls-replication yes
  mkdir -p "$dir/sentinel"
  # The sentinel reaches the master over TLS with the client certificate (tls-replication),
  # and asks its own clients for one. A fresh file each start: the sentinel rewrites it.
  cat >"$dir/sentinel.conf" <<EOC
bind $HOST
port 0
tls-port 26391
tls-cert-file $dir/tls/server.crt
tls-key-file $dir/tls/server.key
tls-ca-cert-file $dir/ca.crt
tls-client-cert-file $dir/client.crt
tls-client-key-file $dir/client.key
tls-auth-clients yes
tls-replication yes
requirepass $TLS_PASSWORD
daemonize no
dir "$dir/sentinel"
sentinel resolve-hostnames no
sentinel monitor $TLS_SENTINEL_MASTER $HOST 16391 1
sentinel auth-pass $TLS_SENTINEL_MASTER $TLS_PASSWORD
sentinel down-after-milliseconds $TLS_SENTINEL_MASTER 2000
EOC
  spawn "$dir/sentinel.pid" "$dir/sentinel.log" redis-server "$dir/sentinel.conf" --sentinel
}

svc_redis_tls_sentinel_ready() {
  redis_tls_ping redis-tls-sentinel 16391 &&
    [[ $(redis_tls_cli redis-tls-sentinel 26391 sentinel get-master-addr-by-name "$TLS_SENTINEL_MASTER" \
      2>/dev/null) == "$HOST"$'\n'16391 ]] &&
    # The sentinel has reached the master over TLS (flags just "master": not s_down).
    [[ $(redis_tls_cli redis-tls-sentinel 26391 sentinel master "$TLS_SENTINEL_MASTER" 2>/dev/null) == \
      *$'\nflags\nmaster\n'* ]]
}

svc_redis_tls_sentinel_url() {
  local dir
  dir=$(svc_dir redis-tls-sentinel)
  printf 'rediss+sentinel://:%s@%s:26391/%s?sentinel_password=%s&ca=%s&cert=%s&key=%s\n' "$TLS_PASSWORD" "$HOST" \
    "$TLS_SENTINEL_MASTER" "$TLS_PASSWORD" "$(url_escape "$dir/ca.crt")" "$(url_escape "$dir/client.crt")" \
    "$(url_escape "$dir/client.key")"
}

# ---------------------------------------------------------------------------------------
# etcd: single member named "default"

svc_etcd_packages() {
  command -v etcd >/dev/null || need_pkg etcd-server
  command -v etcdctl >/dev/null || need_pkg etcd-client
}

svc_etcd_launch() {
  local dir client="http://$HOST:12379" peer="http://$HOST:12380"
  dir=$(svc_dir etcd)
  spawn "$dir/server.pid" "$dir/server.log" \
    etcd --name default --data-dir "$dir/data" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "default=$peer" --initial-cluster-state new \
    --initial-cluster-token polylock-test --logger zap --log-outputs stderr
}

svc_etcd_ready() {
  # `endpoint health` does a real (linearizable) read through raft.
  ETCDCTL_API=3 etcdctl --endpoints "http://$HOST:12379" \
    --dial-timeout 2s --command-timeout 3s endpoint health
}

svc_etcd_url() { printf 'etcd://%s:12379\n' "$HOST"; }

# ---------------------------------------------------------------------------------------
# etcd-cluster: 3 members member1..member3, client ports 12479/12579/12679, peer ports
# 12480/12580/12680. Member N's client port is 12379 + 100*N, its peer port one more.

readonly ETCD_CLUSTER_MEMBERS=(1 2 3)

etcd_cluster_client() { printf 'http://%s:%s\n' "$HOST" "$((12379 + 100 * $1))"; }
etcd_cluster_peer() { printf 'http://%s:%s\n' "$HOST" "$((12380 + 100 * $1))"; }

svc_etcd_cluster_packages() { svc_etcd_packages; }

svc_etcd_cluster_launch() {
  local dir n initial=()
  dir=$(svc_dir etcd-cluster)
  for n in "${ETCD_CLUSTER_MEMBERS[@]}"; do initial+=("member$n=$(etcd_cluster_peer "$n")"); done
  initial=$(IFS=,; printf '%s' "${initial[*]}")
  # The data directories survive a member being killed, so a test can restart the member
  # with the same command line (read from /proc/PID/cmdline) and it rejoins.
  for n in "${ETCD_CLUSTER_MEMBERS[@]}"; do
    spawn "$dir/member$n.pid" "$dir/member$n.log" \
      etcd --name "member$n" --data-dir "$dir/member$n" \
      --listen-client-urls "$(etcd_cluster_client "$n")" --advertise-client-urls "$(etcd_cluster_client "$n")" \
      --listen-peer-urls "$(etcd_cluster_peer "$n")" --initial-advertise-peer-urls "$(etcd_cluster_peer "$n")" \
      --initial-cluster "$initial" --initial-cluster-state new \
      --initial-cluster-token polylock-test-cluster --logger zap --log-outputs stderr
  done
}

etcd_cluster_endpoints() {
  local n eps=()
  for n in "${ETCD_CLUSTER_MEMBERS[@]}"; do eps+=("$(etcd_cluster_client "$n")"); done
  (IFS=,; printf '%s\n' "${eps[*]}")
}

svc_etcd_cluster_ready() {
  # Every member healthy (a linearizable read through raft on each), so a leader exists.
  ETCDCTL_API=3 etcdctl --endpoints "$(etcd_cluster_endpoints)" \
    --dial-timeout 2s --command-timeout 3s endpoint health
}

svc_etcd_cluster_url() { printf 'etcd://%s:12479,%s:12579,%s:12679\n' "$HOST" "$HOST" "$HOST"; }

# ---------------------------------------------------------------------------------------
# etcd-tls: one member, clients over TLS only (server certificate from a throwaway CA, as
# redis-tls), authentication enabled: user polylock (role polylock: read/write on every key)
# and root, both with a password. Peer port plain (a single member has no peers).

readonly ETCD_TLS_USER=polylock
readonly ETCD_TLS_PASSWORD=polylock-etcd-secret
readonly ETCD_TLS_ROOT_PASSWORD=polylock-etcd-root-secret

svc_etcd_tls_packages() {
  svc_etcd_packages
  command -v openssl >/dev/null || need_pkg openssl
}

svc_etcd_tls_launch() {
  local dir client="https://$HOST:12779" peer="http://$HOST:12780"
  dir=$(svc_dir etcd-tls)
  tls_make_certs "$dir"
  spawn "$dir/server.pid" "$dir/server.log" \
    etcd --name default --data-dir "$dir/data" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --cert-file "$dir/tls/server.crt" --key-file "$dir/tls/server.key" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "default=$peer" --initial-cluster-state new \
    --initial-cluster-token polylock-test-tls --logger zap --log-outputs stderr
}

# etcd_tls_ctl [--user U:P] ARGS...: etcdctl against etcd-tls, verifying its certificate.
etcd_tls_ctl() {
  ETCDCTL_API=3 etcdctl --endpoints "https://$HOST:12779" --cacert "$(svc_dir etcd-tls)/ca.crt" \
    --dial-timeout 2s --command-timeout 5s "$@"
}

svc_etcd_tls_setup() {
  wait_until etcd-tls "it to answer" etcd_tls_ctl endpoint health || return 1
  {
    etcd_tls_ctl user add "root:$ETCD_TLS_ROOT_PASSWORD" &&
      etcd_tls_ctl role add root &&
      etcd_tls_ctl user grant-role root root &&
      etcd_tls_ctl role add "$ETCD_TLS_USER" &&
      # Every key: from the empty key to the end of the key space.
      etcd_tls_ctl role grant-permission --from-key "$ETCD_TLS_USER" readwrite '' &&
      etcd_tls_ctl user add "$ETCD_TLS_USER:$ETCD_TLS_PASSWORD" &&
      etcd_tls_ctl user grant-role "$ETCD_TLS_USER" "$ETCD_TLS_USER" &&
      etcd_tls_ctl auth enable
  } >>"$(svc_dir etcd-tls)/setup.log" 2>&1
}

svc_etcd_tls_ready() {
  # A linearizable read that needs both TLS and the password.
  etcd_tls_ctl --user "$ETCD_TLS_USER:$ETCD_TLS_PASSWORD" get --keys-only polylock-ready
}

svc_etcd_tls_url() {
  printf 'etcds://%s:%s@%s:12779?ca=%s\n' "$ETCD_TLS_USER" "$ETCD_TLS_PASSWORD" "$HOST" \
    "$(url_escape "$(svc_dir etcd-tls)/ca.crt")"
}

# ---------------------------------------------------------------------------------------
# zookeeper: standalone server from Debian's jars

readonly ZK_JAR=/usr/share/java/zookeeper.jar

svc_zookeeper_packages() {
  # The jar's manifest Class-Path names its dependencies in /usr/share/java. The package
  # `zookeeper` (zkCli.sh, zkServer.sh) pulls in libzookeeper-java (the jars) and a JRE.
  [[ -f $ZK_JAR ]] || need_pkg zookeeper
  command -v java >/dev/null || need_pkg default-jre-headless
}

svc_zookeeper_launch() {
  local dir
  dir=$(svc_dir zookeeper)
  mkdir -p "$dir/conf" "$dir/data"
  # admin.enableServer=false: no Jetty admin server on 8080. 4lw whitelist: the readiness
  # check (and tests) use `srvr`/`ruok`/`stat`. maxClientCnxns=0: no per-IP connection
  # cap, as every test client comes from 127.0.0.1. tickTime=1000 makes the minimum
  # session timeout 2 s, so session-expiry tests are quick.
  cat >"$dir/conf/zoo.cfg" <<EOF
tickTime=1000
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=12181
clientPortAddress=$HOST
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
EOF
  cat >"$dir/conf/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
EOF
  # No com.sun.management.jmxremote.* flags, so no JMX port is opened; ZooKeeper's
  # log4j JMX beans are switched off too.
  spawn "$dir/server.pid" "$dir/server.log" \
    java -Xms64m -Xmx256m -XX:+UseSerialGC -Djava.awt.headless=true \
    -Dzookeeper.admin.enableServer=false -Dzookeeper.jmx.log4j.disable=true \
    -Dlog4j.configuration="file:$dir/conf/log4j.properties" \
    -cp "$dir/conf:$ZK_JAR" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/conf/zoo.cfg"
}

# zk_4lw PORT WORD: send a ZooKeeper four-letter word, print the reply.
zk_4lw() {
  # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
  timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf %s "$2" >&3 && cat <&3' \
    "$HOST" "$1" "$2" 2>/dev/null
}

svc_zookeeper_ready() {
  # `srvr` answers "not currently serving requests" until the server is up; a serving one
  # reports its Mode (standalone, or leader/follower in an ensemble).
  zk_4lw 12181 srvr | grep -q '^Mode: '
}

svc_zookeeper_url() { printf 'zk://%s:12181\n' "$HOST"; }

# ---------------------------------------------------------------------------------------
# zookeeper-ensemble: 3 servers; clients 12281-12283, quorum 12381-12383, election 12481-12483

readonly ZK_ENSEMBLE_JAVA_OPTS="-Xms32m -Xmx128m -XX:+UseSerialGC -Djava.awt.headless=true \
-Dzookeeper.admin.enableServer=false -Dzookeeper.jmx.log4j.disable=true"

svc_zookeeper_ensemble_packages() { svc_zookeeper_packages; }

svc_zookeeper_ensemble_launch() {
  local dir node i
  dir=$(svc_dir zookeeper-ensemble)
  for i in 1 2 3; do
    node="$dir/node$i"
    mkdir -p "$node/data"
    printf '%s\n' "$i" >"$node/data/myid"
    # As the standalone server, plus the ensemble. Short ticks, so a lost leader is replaced
    # within a few seconds; sessions of 4 s to 20 s (2 to 20 ticks).
    cat >"$node/zoo.cfg" <<EOF
tickTime=1000
initLimit=10
syncLimit=2
dataDir=$node/data
clientPort=$((12280 + i))
clientPortAddress=$HOST
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
server.1=$HOST:12381:12481
server.2=$HOST:12382:12482
server.3=$HOST:12383:12483
EOF
    cat >"$node/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
EOF
    # node<i>/start.sh starts that one server again after a test killed it; it keeps its
    # data, so it rejoins the ensemble as a follower.
    cat >"$node/start.sh" <<EOF
#!/usr/bin/env bash
# Start server $i of the ensemble again (detached), recording its pid as services.sh does.
setsid java $ZK_ENSEMBLE_JAVA_OPTS -Dlog4j.configuration=file:$node/log4j.properties \\
  -cp $ZK_JAR org.apache.zookeeper.server.quorum.QuorumPeerMain $node/zoo.cfg \\
  </dev/null >>$dir/node$i.log 2>&1 &
printf '%s\n' "\$!" >$dir/node$i.pid
EOF
    # shellcheck disable=SC2086 # the options are words
    spawn "$dir/node$i.pid" "$dir/node$i.log" \
      java $ZK_ENSEMBLE_JAVA_OPTS -Dlog4j.configuration="file:$node/log4j.properties" \
      -cp "$ZK_JAR" org.apache.zookeeper.server.quorum.QuorumPeerMain "$node/zoo.cfg"
  done
}

svc_zookeeper_ensemble_ready() {
  local port modes=""
  # Every server serving, and exactly one of them the leader.
  for port in 12281 12282 12283; do
    modes+=$(zk_4lw "$port" srvr | grep '^Mode: ') || return 1
  done
  [[ $(grep -o leader <<<"$modes" | wc -l) == 1 ]]
}

svc_zookeeper_ensemble_url() { printf 'zk://%s:12281,%s:12282,%s:12283\n' "$HOST" "$HOST" "$HOST"; }

# ---------------------------------------------------------------------------------------
# postgres: PostgreSQL 15, user/db polylock, passwords required over TCP

svc_postgres_packages() {
  [[ -x $PG_BIN/postgres && -x $PG_BIN/initdb ]] || need_pkg postgresql-15
  [[ -x $PG_BIN/psql && -x $PG_BIN/pg_isready ]] || need_pkg postgresql-client-15
  command -v openssl >/dev/null || need_pkg openssl
}

# PostgreSQL refuses to run as root: as root, run it as the postgres user (created by the
# package). setpriv execs in place (unlike su/runuser, which fork and wait), so the pid
# that spawn records is the server's own.
PG_AS=()
if ((EUID == 0)); then PG_AS=(setpriv --reuid=postgres --regid=postgres --init-groups --); fi

svc_postgres_launch() {
  local dir data
  dir=$(svc_dir postgres)
  data="$dir/data"
  mkdir -p "$data"
  # TLS beside plain TCP (same port; the client's sslmode decides): CA in $dir/ca.crt.
  tls_make_certs "$dir" postgres
  chmod 600 "$dir/tls/server.key"
  if ((EUID == 0)); then chown -R postgres:postgres "$dir"; fi
  "${PG_AS[@]}" test -w "$data" ||
    die "postgres: $data is not writable by user postgres (is a parent of $BASE_DIR private?)"
  # Host (TCP) connections need a scram-sha-256 password; the Unix socket (in the data
  # directory, used only for setup) trusts everyone.
  "${PG_AS[@]}" "$PG_BIN/initdb" -D "$data" -U postgres --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --no-locale --no-sync \
    >>"$dir/server.log" 2>&1 || { log_tail postgres; die "postgres: initdb failed"; }
  # fsync off: throwaway data, faster tests.
  spawn "$dir/server.pid" "$dir/server.log" \
    "${PG_AS[@]}" "$PG_BIN/postgres" -D "$data" -c listen_addresses="$HOST" -c port=15432 \
    -c unix_socket_directories="$data" -c max_connections=200 \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
    -c ssl=on -c ssl_cert_file="$dir/tls/server.crt" -c ssl_key_file="$dir/tls/server.key"
}

pg_socket_psql() {
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$(svc_dir postgres)/data" -p 15432 -U postgres "$@"
}

# Setup hooks run in a condition (set -e is off there), hence the explicit || return 1.
svc_postgres_setup() {
  wait_until postgres "the Unix socket" \
    "$PG_BIN/pg_isready" -q -h "$(svc_dir postgres)/data" -p 15432 -U postgres || return 1
  pg_socket_psql -d postgres \
    -c "CREATE ROLE polylock LOGIN PASSWORD 'polylock'" \
    -c "CREATE DATABASE polylock OWNER polylock" >/dev/null || return 1
  # PG 15 no longer lets everyone create in schema public; make it polylock's.
  pg_socket_psql -d polylock \
    -c "ALTER SCHEMA public OWNER TO polylock" \
    -c "GRANT ALL ON SCHEMA public TO polylock" >/dev/null
}

svc_postgres_ready() {
  "$PG_BIN/pg_isready" -q -h "$HOST" -p 15432 &&
    [[ $(PGCONNECT_TIMEOUT=3 "$PG_BIN/psql" -X -At -c 'SELECT 1' "$(svc_postgres_url)") == 1 ]]
}

svc_postgres_url() { printf 'postgres://polylock:polylock@%s:15432/polylock\n' "$HOST"; }

# ---------------------------------------------------------------------------------------
# mariadb: user/db polylock, real password authentication

svc_mariadb_packages() {
  # mariadb-server-core has mariadbd and mariadb-install-db without the full server
  # package's galera/perl/service baggage; mariadb-client has mariadb and mariadb-admin.
  if [[ ! -x /usr/sbin/mariadbd ]] || ! command -v mariadb-install-db >/dev/null; then
    need_pkg mariadb-server-core
  fi
  if ! command -v mariadb >/dev/null || ! command -v mariadb-admin >/dev/null; then
    need_pkg mariadb-client
  fi
  command -v openssl >/dev/null || need_pkg openssl
}

# Every mariadb* command below starts with --no-defaults (it must be the first option):
# ignore /etc/mysql/*.cnf and ~/.my.cnf, so the host's configuration cannot interfere.

mariadb_sock() { printf '%s/mariadb.sock\n' "$(svc_dir mariadb)"; }

svc_mariadb_launch() {
  local dir user=()
  dir=$(svc_dir mariadb)
  mkdir -p "$dir/data" "$dir/tmp"
  # TLS beside plain TCP (same port; the client's ssl-mode decides): CA in $dir/ca.crt.
  tls_make_certs "$dir" mariadb
  # mariadbd refuses to run as root unless told to explicitly.
  if ((EUID == 0)); then user=(--user=root); fi
  # root@localhost authenticates by unix_socket only (the OS user running this script);
  # grant tables stay on, so polylock's password is really checked.
  mariadb-install-db --no-defaults "${user[@]}" --datadir="$dir/data" \
    --skip-test-db --skip-name-resolve --auth-root-authentication-method=socket \
    >>"$dir/server.log" 2>&1 || { log_tail mariadb; die "mariadb: mariadb-install-db failed"; }
  spawn "$dir/server.pid" "$dir/server.log" \
    /usr/sbin/mariadbd --no-defaults "${user[@]}" --datadir="$dir/data" \
    --socket="$(mariadb_sock)" --pid-file="$dir/data/mariadbd.pid" \
    --port=13306 --bind-address="$HOST" --skip-name-resolve \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    --tmpdir="$dir/tmp" --max-connections=300 --innodb-buffer-pool-size=64M \
    --innodb-flush-log-at-trx-commit=2 \
    --ssl-ca="$dir/ca.crt" --ssl-cert="$dir/tls/server.crt" --ssl-key="$dir/tls/server.key"
}

svc_mariadb_setup() {
  wait_until mariadb "the Unix socket" \
    mariadb-admin --no-defaults --socket="$(mariadb_sock)" -uroot ping || return 1
  # Anonymous users would shadow polylock@'%' for local connections: drop any.
  mariadb --no-defaults --socket="$(mariadb_sock)" -uroot <<'SQL'
DELETE FROM mysql.global_priv WHERE User = '';
FLUSH PRIVILEGES;
CREATE DATABASE polylock CHARACTER SET utf8mb4;
CREATE USER 'polylock'@'%' IDENTIFIED BY 'polylock';
CREATE USER 'polylock'@'localhost' IDENTIFIED BY 'polylock';
GRANT ALL PRIVILEGES ON polylock.* TO 'polylock'@'%';
GRANT ALL PRIVILEGES ON polylock.* TO 'polylock'@'localhost';
-- A database whose default is latin1, as MariaDB's own default is: the tables polylock
-- creates there must still take every Unicode name.
CREATE DATABASE polylock_latin1 CHARACTER SET latin1;
GRANT ALL PRIVILEGES ON polylock_latin1.* TO 'polylock'@'%';
GRANT ALL PRIVILEGES ON polylock_latin1.* TO 'polylock'@'localhost';
SQL
}

svc_mariadb_ready() {
  local auth=(--no-defaults -h "$HOST" -P 13306 -upolylock --password=polylock
    --connect-timeout=3)
  mariadb-admin "${auth[@]}" ping &&
    [[ $(mariadb "${auth[@]}" -N -B -e 'SELECT 1' polylock) == 1 ]]
}

svc_mariadb_url() { printf 'mysql://polylock:polylock@%s:13306/polylock\n' "$HOST"; }

# ---------------------------------------------------------------------------------------
# Generic start / stop / status

env_var_name() {
  local up=${1^^}
  printf 'POLYLOCK_TEST_%s_URL\n' "${up//-/_}"
}

start_one() {
  local name=$1 dir port
  dir=$(svc_dir "$name")
  if is_running "$name"; then
    # Already up (maybe still starting in another invocation): just wait for it.
    wait_until "$name" "it to answer" call_hook "$name" ready || return 1
    call_hook "$name" url
    return 0
  fi
  stop_one "$name" # reap any half-dead remains (some of several processes, stale pid files)
  for port in ${SVC_PORTS[$name]}; do
    if port_in_use "$port"; then
      die "$name: port $port on $HOST is in use by a process this script did not start"
    fi
  done
  # Throwaway: every fresh start begins from an empty directory.
  rm -rf -- "$dir"
  mkdir -p "$dir"
  msg "starting $name (logs: $dir)"
  call_hook "$name" launch
  if has_hook "$name" setup && ! call_hook "$name" setup; then
    stop_one "$name"
    die "$name: setup failed"
  fi
  if ! wait_until "$name" "it to answer" call_hook "$name" ready; then
    stop_one "$name"
    die "$name did not come up"
  fi
  call_hook "$name" url
}

# stop_pid NAME PIDFILE: signal, wait for exit (SIGKILL after STOP_TIMEOUT), remove the
# pid file (also when stale). The process is not our child, so poll rather than `wait`.
stop_pid() {
  local name=$1 pidfile=$2 pid deadline
  local comm=${SVC_COMM[$name]} sig=${SVC_STOP_SIGNAL[$name]:-TERM}
  pid=$(<"$pidfile")
  if pid_alive "$pid" "$comm"; then
    msg "stopping $name (pid $pid)"
    kill -s "$sig" "$pid" 2>/dev/null || true
    deadline=$((SECONDS + STOP_TIMEOUT))
    while pid_alive "$pid" "$comm"; do
      if ((SECONDS >= deadline)); then
        msg "pid $pid did not exit after ${STOP_TIMEOUT}s: SIGKILL"
        kill -s KILL "$pid" 2>/dev/null || true
        deadline=$((SECONDS + 5))
      fi
      sleep 0.1
    done
  fi
  rm -f -- "$pidfile"
}

stop_one() {
  local name=$1 f
  while read -r f; do
    [[ -n $f ]] || continue
    stop_pid "$name" "$f"
  done < <(pid_files "$name")
}

status_one() {
  local name=$1 pids f
  if ! is_running "$name"; then
    printf '%-14s stopped\n' "$name"
    return 1
  fi
  pids=$(while read -r f; do printf '%s ' "$(<"$f")"; done < <(pid_files "$name"))
  if call_hook "$name" ready >/dev/null 2>&1; then
    printf '%-14s running   pid %s %s\n' "$name" "${pids% }" "$(call_hook "$name" url)"
  else
    printf '%-14s NOT ANSWERING pid %s (logs: %s)\n' "$name" "${pids% }" "$(svc_dir "$name")"
    return 1
  fi
}

# Serialise start/stop across concurrent invocations (parallel test jobs). The lock fd is
# closed in spawned servers (close_inherited_fds), so it is released when we exit.
take_lock() {
  mkdir -p "$BASE_DIR"
  exec {LOCK_FD}>"$BASE_DIR/.lock"
  flock -w 900 "$LOCK_FD" || die "could not lock $BASE_DIR/.lock"
}

check_base_dir() {
  [[ $BASE_DIR == /* && $BASE_DIR != / ]] ||
    die "POLYLOCK_SERVICES_DIR must be an absolute path other than / (got '$BASE_DIR')"
}

# Expand the SERVICE arguments (default: all) into the global array SELECTED.
select_services() {
  local s
  SELECTED=("$@")
  if ((${#SELECTED[@]} == 0)); then SELECTED=("${SERVICES[@]}"); fi
  for s in "${SELECTED[@]}"; do
    is_known "$s" || die "unknown service '$s' (known: ${KNOWN_SERVICES[*]})"
  done
}

main() {
  local cmd=${1:-} s rc=0
  [[ -n $cmd ]] || usage
  shift
  check_base_dir
  case $cmd in
    start)
      select_services "$@"
      take_lock
      install_missing "${SELECTED[@]}"
      for s in "${SELECTED[@]}"; do start_one "$s"; done
      ;;
    stop)
      select_services "$@"
      take_lock
      for s in "${SELECTED[@]}"; do stop_one "$s"; done
      ;;
    status)
      select_services "$@"
      for s in "${SELECTED[@]}"; do status_one "$s" || rc=3; done
      return "$rc"
      ;;
    url)
      (($# == 1)) || usage
      is_known "$1" || die "unknown service '$1' (known: ${KNOWN_SERVICES[*]})"
      call_hook "$1" url
      ;;
    env)
      (($# == 0)) || usage
      local any=0
      for s in "${KNOWN_SERVICES[@]}"; do
        if is_running "$s"; then
          printf 'export %s=%q\n' "$(env_var_name "$s")" "$(call_hook "$s" url)"
          any=1
        fi
      done
      # The Rust suites' server tier (core/tests/common): on once any service runs.
      if ((any)); then
        echo 'export POLYLOCK_TEST_SERVERS=1'
      fi
      ;;
    -h | --help | help) usage 0 ;;
    *) usage ;;
  esac
}

main "$@"
