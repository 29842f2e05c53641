# Shared by scripts/test and scripts/demo: find or start what the project
# needs, installing tools into .tools/bin through the Go module proxy.
# Sourced, not run.

STAGING_DIR="${STAGING_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/payrecon.XXXXXX")}"
TOOLS_BIN="$PWD/.tools/bin"
STATICCHECK_VERSION=v0.8.2
STRIPE_MOCK_VERSION=v0.203.0
DEFAULT_DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
CLEANUPS=()

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

cleanup() {
  local i
  for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do eval "${CLEANUPS[i]}" || true; done
  rm -rf "$STAGING_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ensure_go() {
  command -v go >/dev/null 2>&1 || die "Go is not installed (need go 1.26): https://go.dev/doc/install"
}

# install_tool <name> <module@version>: go install into .tools/bin once per version.
install_tool() {
  local name=$1 pkg=$2 stamp="$TOOLS_BIN/.$1-${2##*@}"
  if [[ -x "$TOOLS_BIN/$name" && -f "$stamp" ]]; then return; fi
  log "installing $pkg"
  mkdir -p "$TOOLS_BIN"
  GOBIN="$TOOLS_BIN" go install "$pkg" || die "could not install $pkg through the Go module proxy"
  rm -f "$TOOLS_BIN/.$name-"*
  touch "$stamp"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  local p
  for p in $(seq "${1:-54320}" 65000); do
    port_open "$p" || { echo "$p"; return; }
  done
  die "no free TCP port on 127.0.0.1"
}

wait_port() { # wait_port <port> <what>
  local i
  for i in $(seq 1 200); do port_open "$1" && return; sleep 0.05; done
  die "$2 did not start listening on 127.0.0.1:$1"
}

pg_bin() { # the newest installed PostgreSQL binary of that name
  local name=$1 p
  p=$(command -v "$name" 2>/dev/null) && { echo "$p"; return; }
  p=$(ls -d /usr/lib/postgresql/*/bin/"$name" /usr/local/pgsql/bin/"$name" 2>/dev/null | sort -V | tail -1)
  [[ -n "$p" ]] && echo "$p"
}

pg_answers() { # pg_answers <url>
  local isready
  isready=$(pg_bin pg_isready) || return 1
  "$isready" -q -d "$1" -t 3
}

# ensure_postgres: DATABASE_URL if set (it must answer); else the local
# server; else start the local cluster; else a throwaway cluster made with
# initdb in a temp folder, removed on exit. Exports DATABASE_URL.
ensure_postgres() {
  if [[ -n "${PAYRECON_THROWAWAY_PG:-}" ]]; then # exercise the last resort on purpose
    start_throwaway_postgres
    return
  fi
  if [[ -n "${DATABASE_URL:-}" ]]; then
    pg_answers "$DATABASE_URL" || die "DATABASE_URL is set but no PostgreSQL answers there"
    log "PostgreSQL: DATABASE_URL"
    return
  fi
  if pg_answers "$DEFAULT_DATABASE_URL"; then
    export DATABASE_URL="$DEFAULT_DATABASE_URL"
    log "PostgreSQL: local server on 127.0.0.1:5432"
    return
  fi
  if command -v pg_lsclusters >/dev/null 2>&1 && command -v pg_ctlcluster >/dev/null 2>&1; then
    local ver name
    read -r ver name _ < <(pg_lsclusters -h | sort -V | tail -1) || true
    if [[ -n "${ver:-}" ]]; then
      log "starting the local PostgreSQL cluster $ver/$name"
      pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start 2>/dev/null || true
      local i
      for i in $(seq 1 100); do
        if pg_answers "$DEFAULT_DATABASE_URL"; then
          export DATABASE_URL="$DEFAULT_DATABASE_URL"
          return
        fi
        sleep 0.1
      done
    fi
  fi
  start_throwaway_postgres
}

start_throwaway_postgres() {
  local initdb pgctl dir port run=()
  initdb=$(pg_bin initdb) || die "no PostgreSQL answers and initdb is not installed: install PostgreSQL 15+ or set DATABASE_URL"
  pgctl=$(pg_bin pg_ctl) || die "pg_ctl not found next to initdb"
  dir="$STAGING_DIR/pgdata"
  mkdir -p "$dir"
  if [[ $(id -u) == 0 ]]; then
    # PostgreSQL refuses to run as root: run it as the postgres (or nobody) user.
    local user=postgres
    id -u "$user" >/dev/null 2>&1 || user=nobody
    chown -R "$user" "$STAGING_DIR"
    chmod 755 "$STAGING_DIR"
    run=(runuser -u "$user" --)
  fi
  port=$(free_port 55432)
  log "starting a throwaway PostgreSQL in $dir on port $port"
  "${run[@]}" "$initdb" -D "$dir" -U postgres -A trust --no-sync >"$STAGING_DIR/initdb.log" 2>&1 \
    || die "initdb failed: $(tail -5 "$STAGING_DIR/initdb.log")"
  "${run[@]}" "$pgctl" -D "$dir" -l "$STAGING_DIR/postgres.log" -w \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=off -c max_connections=300" start >/dev/null \
    || die "throwaway PostgreSQL did not start: $(tail -5 "$STAGING_DIR/postgres.log")"
  CLEANUPS+=("${run[*]} $pgctl -D $dir -m immediate stop >/dev/null 2>&1")
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

# start_stripe_mock: Stripe's own mock on free loopback ports, stopped on
# exit. Exports STRIPE_MOCK_URL.
start_stripe_mock() {
  install_tool stripe-mock "github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION"
  local http https
  http=$(free_port 12111)
  https=$(free_port $((http + 1)))
  "$TOOLS_BIN/stripe-mock" -http-addr "127.0.0.1:$http" -https-addr "127.0.0.1:$https" \
    >"$STAGING_DIR/stripe-mock.log" 2>&1 &
  local pid=$!
  CLEANUPS+=("kill $pid 2>/dev/null; wait $pid 2>/dev/null")
  wait_port "$http" stripe-mock
  export STRIPE_MOCK_URL="http://127.0.0.1:$http"
  log "stripe-mock $STRIPE_MOCK_VERSION on $STRIPE_MOCK_URL"
}

# ensure_chromium: Debian's chromium for the console's browser tests,
# installed when missing (non-interactive). Exports PAYRECON_REQUIRE_CHROMIUM
# so that those tests fail instead of skipping without it.
ensure_chromium() {
  if ! command -v chromium >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "chromium is not installed and apt-get is not available: install Chromium for the browser tests"
    local sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    log "installing chromium (Debian's package) for the browser tests"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >"$STAGING_DIR/apt.log" 2>&1 \
      || { "${sudo[@]}" apt-get update -q >>"$STAGING_DIR/apt.log" 2>&1 \
           && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >>"$STAGING_DIR/apt.log" 2>&1; } \
      || die "could not install chromium: $(tail -5 "$STAGING_DIR/apt.log")"
  fi
  export PAYRECON_REQUIRE_CHROMIUM=1
  log "chromium: $(chromium --version 2>/dev/null || echo installed)"
}
