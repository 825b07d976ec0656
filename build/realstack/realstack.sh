#!/usr/bin/env bash
# realstack: the real OpenStack services (Keystone, Placement, Glance, Nova with its fake
# hypervisor, Neutron, Octavia with noop amphorae) from Debian 12 packages, on 127.0.0.1 of
# this machine, so that ccm's OpenStack provider can be tested against the real APIs rather
# than against our fake. See build/realstack/README.md; what the real services answered to
# the requests our fake must imitate is in build/realstack/FINDINGS.md.
#
#   realstack.sh up            install (if needed), configure (if not yet), start, bootstrap; a
#                              second `up` on a running stack only verifies it (seconds)
#   realstack.sh install       apt-get install the packages (quick no-op when all are there)
#   realstack.sh configure     WIPE the state folder, write configs, create the databases
#   realstack.sh start         start every service, wait until each one answers
#   realstack.sh stop          stop them, by PID file, consumers first; SIGKILL after a timeout
#   realstack.sh status        PID, RSS and PSS (with children) of each service, and the total
#   realstack.sh bootstrap     networks, router, flavor, image, servers; ids.env, cloud.conf
#   realstack.sh verify        every API answers, k8s-ccm can log in and list load balancers
#   realstack.sh octavia-mode jobboard|plain   switch Octavia's flow engine (restarts Octavia only)
#   realstack.sh reap          delete the VIP ports left behind by deleted load balancers
#   realstack.sh e2e           the load balancer life cycle with the openstack CLI, as k8s-ccm
#   realstack.sh probe         Octavia's and Neutron's exact answers for FINDINGS.md (probe.py)
#   realstack.sh env           the paths of cloud.conf, ids.env, openrc files, logs (shell syntax)
#
# Environment: REALSTACK_DIR (state folder; default <repo>/bin/realstack, git-ignored),
# REALSTACK_PASSWORD (every user's password; default "secret"), OCTAVIA_JOBBOARD (1, default:
# jobboard mode; 0: Debian's default flow engine, see octavia_mode_settings),
# REALSTACK_STOP_TIMEOUT (seconds before SIGKILL; default 30).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
STATE=${REALSTACK_DIR:-$REPO/bin/realstack}
ETC=$STATE/etc LOGS=$STATE/log RUN=$STATE/run DB=$STATE/db
# Debian's python3 and the tools built on it, never a pyenv or venv python3 that may come first.
export PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
PY=/usr/bin/python3
PASSWORD=${REALSTACK_PASSWORD:-secret}
REGION=RegionOne
IP=127.0.0.1
NICE=(nice -n 19)           # the machine is shared: every service yields to everything else
STOP_TIMEOUT=${REALSTACK_STOP_TIMEOUT:-30}
COMPUTE_HOST=compute-1      # nova-compute's host name, and the host of the fake OVS agent

# Ports, all on $IP (bootstrap.py writes the six API ports into ids.env)
KEYSTONE_PORT=5000 PLACEMENT_PORT=8778 GLANCE_PORT=9292 NOVA_PORT=8774 NEUTRON_PORT=9696
OCTAVIA_PORT=9876 MARIADB_PORT=3306 RABBIT_PORT=5672 REDIS_PORT=6379 EPMD_PORT=4369 RABBIT_DIST_PORT=25672
AUTH_URL=http://$IP:$KEYSTONE_PORT/v3

# Every service, in start order (`status` lists them so; `stop` goes by STOP_TIERS).
SERVICES=(mariadb epmd rabbitmq redis keystone placement glance-api neutron-api nova-api
  nova-conductor nova-scheduler nova-compute octavia-api octavia-worker)

PACKAGES=(keystone placement-api glance-api nova-api nova-conductor nova-scheduler neutron-server
  octavia-api octavia-worker python3-openstackclient python3-octaviaclient python3-openstacksdk
  rabbitmq-server mariadb-server redis-server python3-redis python3-pymysql python3-requests
  uwsgi uwsgi-plugin-python3 sqlite3 curl openssl procps iproute2)
# (curl, procps and iproute2: the readiness checks, status and the loopback check; openssl: the
# Octavia CA; python3-requests: probe.py. No psmisc or bc: status walks /proc itself.)

# admin credentials for the openstack CLI and bootstrap.py
export OS_AUTH_URL=$AUTH_URL OS_USERNAME=admin OS_PASSWORD=$PASSWORD OS_PROJECT_NAME=admin \
  OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default OS_IDENTITY_API_VERSION=3 \
  OS_REGION_NAME=$REGION OS_INTERFACE=public

# ---------------------------------------------------------------------------------------------
# logging and timing

log() { printf '[realstack %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }
secs() { printf '%d.%01ds' $(($1 / 1000)) $((($1 % 1000) / 100)); }
# step TITLE FUNCTION [ARGS...]: runs FUNCTION and logs how long it took.
step() {
  local title=$1 t0; shift
  t0=$(now_ms)
  log "== $title"
  "$@"
  log "== $title: done in $(secs $(($(now_ms) - t0)))"
}

# ---------------------------------------------------------------------------------------------
# install

missing_packages() {
  local installed
  installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${PACKAGES[@]}" 2>/dev/null |
    awk '$1 == "ii" { print $2 }')
  local p
  for p in "${PACKAGES[@]}"; do grep -qx "$p" <<<"$installed" || echo "$p"; done
}

cmd_install() {
  local missing
  missing=$(missing_packages)
  if [ -z "$missing" ]; then log "all ${#PACKAGES[@]} packages are installed"; return 0; fi
  log "installing: $(echo $missing)"
  # The packages' maintainer scripts would start Debian's own keystone, rabbitmq, mariadb, redis
  # ... on their default ports and configs: a policy-rc.d that says 101 ("action forbidden")
  # keeps them stopped; ours run from $STATE with their own configs.
  local own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && own_policy=1
  fi
  # Lock timeout: wait for another apt/dpkg run (unattended upgrades, a parallel install).
  apt-get -o DPkg::Lock::Timeout=1200 update -q
  DEBIAN_FRONTEND=noninteractive "${NICE[@]}" apt-get -o DPkg::Lock::Timeout=1200 install -y -q \
    --no-install-recommends $missing
  [ $own_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  # nova-compute (the package) is not installed on purpose: it pulls libvirt and QEMU. The fake
  # hypervisor needs only python3-nova, from which start_nova_compute runs the same entry point.
  return 0
}

# ---------------------------------------------------------------------------------------------
# configuration files

# A keystoneauth password section for a service user of project "service".
auth_section() {
  cat <<EOF
[$1]
auth_url = http://$IP:$KEYSTONE_PORT
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = $2
password = $PASSWORD
region_name = $REGION
EOF
}

# keystonemiddleware's section of an API that checks tokens as service user $1.
authtoken_section() {
  auth_section keystone_authtoken "$1"
  echo "www_authenticate_uri = http://$IP:$KEYSTONE_PORT"
  echo "service_token_roles_required = true"
}

RABBIT_URL="rabbit://guest:guest@$IP:$RABBIT_PORT/" # guest may log in from loopback only
# AMQP heartbeats off. Under uwsgi (neutron-api, octavia-api, nova-api) oslo.messaging's
# heartbeat thread never runs; RabbitMQ then dropped their connections after 60 s ("missed
# heartbeats from client, timeout: 60s") and the next Neutron POST /v2.0/ports hung for more than
# ten minutes, with octavia-api waiting on it. On loopback nothing needs heartbeats.
rabbit_section() { printf '[oslo_messaging_rabbit]\nheartbeat_timeout_threshold = 0\n'; }

# Neutron's and Octavia's migrations refuse SQLite ("NotImplementedError: No support for ALTER of
# constraints in SQLite dialect"): those two live in MariaDB, the others in SQLite files.
mysql_url() { echo "mysql+pymysql://$1:$PASSWORD@$IP:$MARIADB_PORT/$1"; }
sqlite_url() { echo "sqlite:///$DB/$1.sqlite"; }
mysql_root() { mariadb --defaults-file="$ETC/my.cnf" -uroot "$@"; }

write_mariadb_conf() {
  cat >"$ETC/my.cnf" <<EOF
[mysqld]
datadir = $STATE/mysql
socket = $RUN/mysqld.sock
pid-file = $RUN/mysqld.pidfile
bind-address = $IP
port = $MARIADB_PORT
user = root
skip-name-resolve
# small: two databases of a few MiB
performance_schema = off
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
max_connections = 200
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
log-error = $LOGS/mariadb.err
[client]
socket = $RUN/mysqld.sock
EOF
}

configure_mariadb() {
  write_mariadb_conf
  "${NICE[@]}" mariadb-install-db --defaults-file="$ETC/my.cnf" --auth-root-authentication-method=socket \
    >"$LOGS/mariadb-install.log" 2>&1
  start_mariadb
  local db
  for db in neutron octavia; do
    mysql_root -e "CREATE DATABASE $db; CREATE USER '$db'@'$IP' IDENTIFIED BY '$PASSWORD';
      GRANT ALL ON $db.* TO '$db'@'$IP';"
  done
  mysql_root -e "CREATE DATABASE octavia_persistence; GRANT ALL ON octavia_persistence.* TO 'octavia'@'$IP';"
}

configure_rabbitmq() {
  mkdir -p "$ETC/rabbitmq" "$STATE/rabbitmq"
  echo '[].' >"$ETC/rabbitmq/enabled_plugins" # no management plugin: less memory, no extra port
  cat >"$ETC/rabbitmq/rabbitmq.conf" <<EOF
listeners.tcp.default = $IP:$RABBIT_PORT
loopback_users.guest = true
log.file.level = warning
EOF
}

configure_keystone() {
  local d=$ETC/keystone conf=$ETC/keystone/keystone.conf
  mkdir -p "$d/fernet-keys" "$d/credential-keys"
  cat >"$conf" <<EOF
[DEFAULT]
debug = false
[database]
connection = $(sqlite_url keystone)
[identity]
# bcrypt's cheapest cost: every password login (each service's, each test client's) hashes
# once; at the default cost of 12 that is a noticeable share of a niced, shared core.
password_hash_rounds = 4
[token]
provider = fernet
expiration = 7200
[fernet_tokens]
key_repository = $d/fernet-keys
[credential]
key_repository = $d/credential-keys
[cache]
enabled = false
EOF
  chmod 700 "$d/fernet-keys" "$d/credential-keys" # else: "key_repository is world readable"
  "${NICE[@]}" keystone-manage --config-file "$conf" db_sync
  keystone-manage --config-file "$conf" fernet_setup --keystone-user root --keystone-group root
  keystone-manage --config-file "$conf" credential_setup --keystone-user root --keystone-group root
  # admin user, project admin, roles admin/member/reader, the identity endpoints
  "${NICE[@]}" keystone-manage --config-file "$conf" bootstrap --bootstrap-password "$PASSWORD" \
    --bootstrap-admin-url "$AUTH_URL/" --bootstrap-internal-url "$AUTH_URL/" \
    --bootstrap-public-url "$AUTH_URL/" --bootstrap-region-id $REGION
}

configure_placement() {
  mkdir -p "$ETC/placement"
  { cat <<EOF
[DEFAULT]
debug = false
[api]
auth_strategy = keystone
[placement_database]
connection = $(sqlite_url placement)
EOF
    authtoken_section placement; } >"$ETC/placement/placement.conf"
  "${NICE[@]}" placement-manage --config-file "$ETC/placement/placement.conf" db sync
}

# Glance only because nova-api reads the image of a new server; its store is a folder.
configure_glance() {
  local d=$ETC/glance
  mkdir -p "$d" "$STATE/glance/images"
  cp /etc/glance/glance-api-paste.ini "$d/"
  { cat <<EOF
[DEFAULT]
debug = false
bind_host = $IP
bind_port = $GLANCE_PORT
workers = 1
enabled_backends = file:file
[database]
connection = $(sqlite_url glance)
[glance_store]
default_backend = file
[file]
filesystem_store_datadir = $STATE/glance/images
[paste_deploy]
flavor = keystone
config_file = $d/glance-api-paste.ini
[oslo_concurrency]
lock_path = $RUN/lock
EOF
    authtoken_section glance; } >"$d/glance-api.conf"
  "${NICE[@]}" glance-manage --config-file "$d/glance-api.conf" db_sync >/dev/null
}

configure_nova() {
  local d=$ETC/nova
  mkdir -p "$d" "$STATE/nova/instances"
  cp /etc/nova/api-paste.ini "$d/"
  { cat <<EOF
[DEFAULT]
debug = false
host = $COMPUTE_HOST
my_ip = $IP
state_path = $STATE/nova
instances_path = $STATE/nova/instances
# No libvirt: servers are rows in the database, "running" on the fake hypervisor.
compute_driver = fake.FakeDriver
transport_url = $RABBIT_URL
osapi_compute_listen = $IP
osapi_compute_workers = 1
enabled_apis = osapi_compute
[api]
auth_strategy = keystone
[api_database]
connection = $(sqlite_url nova_api)
[database]
connection = $(sqlite_url nova)
[conductor]
workers = 1
[scheduler]
workers = 1
discover_hosts_in_cells_interval = 30
[glance]
api_servers = http://$IP:$GLANCE_PORT
[vnc]
enabled = false
[wsgi]
api_paste_config = $d/api-paste.ini
[oslo_concurrency]
lock_path = $RUN/lock
[oslo_messaging_notifications]
driver = noop
EOF
    authtoken_section nova
    auth_section placement placement
    auth_section neutron neutron
    auth_section service_user nova; echo "send_service_user_token = false"
    rabbit_section
  } >"$d/nova.conf"
  local nm=(nice -n 19 nova-manage --config-file "$d/nova.conf")
  "${nm[@]}" api_db sync
  "${nm[@]}" cell_v2 map_cell0 --database_connection "$(sqlite_url nova_cell0)"
  "${nm[@]}" cell_v2 create_cell --name cell1
  "${nm[@]}" db sync
}

configure_neutron() {
  local d=$ETC/neutron
  mkdir -p "$d"
  cp /etc/neutron/api-paste.ini "$d/"
  { cat <<EOF
[DEFAULT]
debug = false
bind_host = $IP
bind_port = $NEUTRON_PORT
core_plugin = ml2
# The L3 plugin "router" brings extraroute and extraroute-atomic with it (bootstrap checks
# and records EXTRAROUTE_ATOMIC in ids.env).
service_plugins = router
auth_strategy = keystone
allow_overlapping_ips = true
transport_url = $RABBIT_URL
api_workers = 1
rpc_workers = 0
rpc_state_report_workers = 0
# The fake OVS agent (fake_ovs_agent) never reports: ten years until it counts as down.
agent_down_time = 315360000
notify_nova_on_port_status_changes = true
notify_nova_on_port_data_changes = true
api_paste_config = $d/api-paste.ini
[database]
connection = $(mysql_url neutron)
[oslo_concurrency]
lock_path = $RUN/lock
[oslo_messaging_notifications]
driver = noop
EOF
    authtoken_section neutron
    auth_section nova nova
    rabbit_section
  } >"$d/neutron.conf"
  # ML2 with no agent running. Nova's server create needs its port bound (else
  # PortBindingFailed and the server goes ERROR); the openvswitch mechanism driver binds a port
  # when an "Open vSwitch agent" of the port's host is alive, so fake_ovs_agent writes that
  # agent's row. Ports get bound (vif_type ovs) but stay DOWN: no agent reports them up.
  # (Neutron's "test" mechanism driver, from neutron/tests, would bind them ACTIVE, but it fails
  # every bind here with an AssertionError in _check_port_context.)
  cat >"$d/ml2_conf.ini" <<EOF
[ml2]
type_drivers = flat,vxlan
tenant_network_types = vxlan
mechanism_drivers = openvswitch
extension_drivers = port_security
[ml2_type_flat]
flat_networks = *
[ml2_type_vxlan]
vni_ranges = 1:1000
[securitygroup]
enable_security_group = true
firewall_driver = openvswitch
EOF
  "${NICE[@]}" neutron-db-manage --config-file "$d/neutron.conf" --config-file "$d/ml2_conf.ini" upgrade heads
  fake_ovs_agent
}

# The row an Open vSwitch agent on $COMPUTE_HOST writes with its first report. Its
# ovs_capabilities must be a dict: a list made every bind fail ("AttributeError: 'list' object
# has no attribute 'get'", then PortBindingFailed).
fake_ovs_agent() {
  local conf='{"bridge_mappings": {"public": "br-ex"}, "tunnel_types": ["vxlan"],
    "integration_bridge": "br-int", "ovs_hybrid_plug": false, "datapath_type": "system",
    "ovs_capabilities": {"datapath_types": ["system"], "iface_types": ["internal", "system", "vxlan"]},
    "l2_population": false, "firewall_driver": "openvswitch", "devices": 0}'
  mysql_root neutron -e "INSERT INTO agents (id, agent_type, \`binary\`, topic, host, admin_state_up,
    created_at, started_at, heartbeat_timestamp, configurations, \`load\`)
    VALUES (UUID(), 'Open vSwitch agent', 'neutron-openvswitch-agent', 'N/A', '$COMPUTE_HOST', 1,
    UTC_TIMESTAMP(), UTC_TIMESTAMP(), UTC_TIMESTAMP(), '$conf', 0)"
}

# Octavia's create flow puts a CA into the amphora's config drive even with the noop amphora and
# compute drivers: without these files every create went ERROR ("FileNotFoundError:
# /etc/octavia/certs/ca_01.pem"). A throw-away CA and client certificate.
make_octavia_certs() {
  local c=$ETC/octavia/certs
  mkdir -p "$c"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=realstack-octavia-ca \
    -keyout "$c/cakey.pem" -out "$c/ca_01.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=realstack-octavia-controller \
    -keyout "$c/client.key" -out "$c/client.csr" 2>/dev/null
  openssl x509 -req -in "$c/client.csr" -CA "$c/ca_01.pem" -CAkey "$c/cakey.pem" \
    -CAcreateserial -days 3650 -out "$c/client.crt" 2>/dev/null
  cat "$c/client.crt" "$c/client.key" >"$c/client.pem"
}

# Octavia's two modes (the file $STATE/octavia-mode says which one is in force):
#
# plain: Debian's (and upstream's) defaults: no jobboard, SINGLE topology. Octavia 11.0.0's v2
#   worker then builds a fully populated create's flow without its listeners
#   (ControllerWorker.run_flow hands listeners= to taskflow_load, not to the flow factory): the
#   load balancer goes ACTIVE, its listeners, pools, members and monitors stay PENDING_CREATE for
#   good, and every later change to them is refused 409 ("... is immutable"). ccm's and the
#   upstream CCM's creates are fully populated, so this is what a stock Octavia 11 gives them.
# jobboard: the jobboard (Redis, and a persistence database) gives the flow factory its
#   arguments and fully populated creates work. It needs ACTIVE_STANDBY: in SINGLE the jobboard's
#   create flow fails validation before any task runs ("MissingDependencies: 'execute' method on
#   AmphoraePostNetworkPlug requires ['amphorae_network_config'] ...") and the load balancer
#   stays PENDING_CREATE for good. With noop amphorae the second amphora costs nothing.
octavia_mode() { cat "$STATE/octavia-mode" 2>/dev/null || echo jobboard; }
octavia_mode_settings() {
  case $1 in
    jobboard) echo "true ACTIVE_STANDBY" ;;
    plain) echo "false SINGLE" ;;
    *) die "octavia mode: jobboard or plain, not '$1'" ;;
  esac
}

# octavia_conf NETWORK_DRIVER MODE: the API and the worker differ in their network driver.
octavia_conf() {
  local jobboard topology
  read -r jobboard topology <<<"$(octavia_mode_settings "$2")"
  cat <<EOF
# realstack: Octavia mode "$2" (realstack.sh octavia-mode rewrites this file)
[DEFAULT]
debug = false
transport_url = $RABBIT_URL
[api_settings]
bind_host = $IP
bind_port = $OCTAVIA_PORT
auth_strategy = keystone
api_base_uri = http://$IP:$OCTAVIA_PORT
enabled_provider_drivers = amphora:Amphora provider (v2 worker; noop amphora and compute drivers)
default_provider_driver = amphora
[database]
connection = $(mysql_url octavia)
[controller_worker]
amphora_driver = amphora_noop_driver
compute_driver = compute_noop_driver
network_driver = $1
loadbalancer_topology = $topology
amp_boot_network_list = 00000000-0000-0000-0000-000000000000
amp_flavor_id = 1
amp_image_tag = amphora
client_ca = $ETC/octavia/certs/ca_01.pem
[certificates]
cert_generator = local_cert_generator
ca_certificate = $ETC/octavia/certs/ca_01.pem
ca_private_key = $ETC/octavia/certs/cakey.pem
[haproxy_amphora]
client_cert = $ETC/octavia/certs/client.pem
server_ca = $ETC/octavia/certs/ca_01.pem
[task_flow]
jobboard_enabled = $jobboard
jobboard_backend_driver = redis_taskflow_driver
jobboard_backend_hosts = $IP
jobboard_backend_port = $REDIS_PORT
persistence_connection = $(mysql_url octavia)_persistence
[health_manager]
bind_ip = $IP
bind_port = 5555
controller_ip_port_list = $IP:5555
heartbeat_key = insecure
[oslo_messaging]
topic = octavia_prov
[oslo_concurrency]
lock_path = $RUN/lock
[oslo_messaging_notifications]
driver = noop
[driver_agent]
status_socket_path = $RUN/octavia-status.sock
stats_socket_path = $RUN/octavia-stats.sock
get_socket_path = $RUN/octavia-get.sock
[neutron]
region_name = $REGION
endpoint_type = public
[nova]
region_name = $REGION
endpoint_type = public
EOF
  authtoken_section octavia
  auth_section service_auth octavia
  rabbit_section
}

# The API and the worker get different network drivers. The API's allowed_address_pairs_driver
# makes the VIP a real Neutron port (octavia-lb-<id>, owner Octavia) that floating IPs can be put
# on. The worker cannot use it with the noop compute driver: every create went ERROR
# ("PlugVIPException ... 'NoneType' object has no attribute 'fixed_ips'"). With
# network_noop_driver the worker plugs nothing and also unplugs nothing: a deleted load
# balancer leaves its VIP port behind (`realstack.sh reap` deletes those).
write_octavia_confs() {
  local mode=$1
  octavia_conf allowed_address_pairs_driver "$mode" >"$ETC/octavia/octavia-api.conf"
  octavia_conf network_noop_driver "$mode" >"$ETC/octavia/octavia-worker.conf"
  echo "$mode" >"$STATE/octavia-mode"
}

configure_octavia() {
  mkdir -p "$ETC/octavia"
  make_octavia_certs
  local mode=jobboard
  [ "${OCTAVIA_JOBBOARD:-1}" = 0 ] && mode=plain
  write_octavia_confs $mode
  "${NICE[@]}" octavia-db-manage --config-file "$ETC/octavia/octavia-api.conf" upgrade head
  create_jobboard_tables
}

# The jobboard's persistence tables. `octavia-db-manage upgrade_persistence` fails: Debian's
# python3-taskflow ships no alembic folder ("No config file '.../alembic/alembic.ini' found").
# So they are made from taskflow's own table definitions, with every TEXT column turned into
# LONGTEXT as taskflow's migrations do: with TEXT the first ACTIVE_STANDBY create failed
# ("Data too long for column 'results'", StorageFailure).
create_jobboard_tables() {
  "${NICE[@]}" $PY - "$(mysql_url octavia)_persistence" <<'EOF'
import sys
import sqlalchemy as sa
from taskflow.persistence.backends.sqlalchemy import tables
md = sa.MetaData()
tables.fetch(md)
md.create_all(sa.create_engine(sys.argv[1]))
EOF
  local t c
  mysql_root -N -e "SELECT table_name, column_name FROM information_schema.columns
    WHERE table_schema = 'octavia_persistence' AND data_type = 'text'" |
    while read -r t c; do mysql_root octavia_persistence -e "ALTER TABLE $t MODIFY $c LONGTEXT"; done
}

# SQLite in its default rollback-journal mode: Keystone's POST /v3/roles failed with HTTP 500
# "(sqlite3.OperationalError) database is locked" while another connection of the same process
# held a read lock. Write-ahead logging (a setting kept in the file) lets readers and a writer
# work side by side.
sqlite_wal() {
  local f
  for f in "$DB"/*.sqlite; do sqlite3 "$f" 'PRAGMA journal_mode=WAL;' >/dev/null; done
}

# parallel FUNCTION...: runs the functions side by side, each logging to log/configure-NAME.log,
# and fails (showing the log's end) if one of them fails.
parallel() {
  local fn pids=() names=() i rc=0
  for fn in "$@"; do
    ( t0=$(now_ms); "$fn"; log "   $fn: $(secs $(($(now_ms) - t0)))" 2>&3 ) 3>&2 >"$LOGS/configure-$fn.log" 2>&1 &
    pids+=($!) names+=("$fn")
  done
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      rc=1; log "${names[$i]} failed; end of $LOGS/configure-${names[$i]}.log:"; tail -20 "$LOGS/configure-${names[$i]}.log" >&2
    fi
  done
  return $rc
}

# MariaDB's and Octavia's unix sockets live in $RUN: a path longer than 107 bytes cannot be bound.
check_run_path() {
  ((${#RUN} < 80)) || die "state folder path too long for unix sockets ($RUN): set REALSTACK_DIR to a shorter one"
}

cmd_configure() {
  check_run_path
  cmd_stop
  check_ports_free
  log "wiping $STATE"
  rm -rf "$STATE"
  mkdir -p "$ETC" "$LOGS" "$RUN/lock" "$DB"
  step "mariadb: data folder, databases" configure_mariadb
  configure_rabbitmq
  # SQLite services and MariaDB services side by side: on two cores this about halves the time
  # (most of each step is python imports and migrations).
  step "databases and configs" parallel configure_keystone configure_nova configure_placement \
    configure_glance configure_neutron configure_octavia
  sqlite_wal
  step "keystone: start" start_keystone
  step "keystone: users, roles, services, endpoints" bootstrap_py identity
  date -u +%FT%TZ >"$STATE/configured"
}

# ---------------------------------------------------------------------------------------------
# processes

pid_of() { cat "$RUN/$1.pid" 2>/dev/null; }
running() { local p; p=$(pid_of "$1") && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# descendants PID: PID and all its descendants, one a line.
descendants() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END { for (p in parent) { q = p; while (q != "" && q != 0 && q != 1) { if (q == root) { print p; break } q = parent[q] } } }'
}

# daemon NAME COMMAND...: a background process in its own session, niced, PID in run/NAME.pid,
# output in log/NAME.log (the previous run's kept as NAME.log.old).
daemon() {
  local name=$1; shift
  running "$name" && return 0
  [ -f "$LOGS/$name.log" ] && mv "$LOGS/$name.log" "$LOGS/$name.log.old"
  setsid "${NICE[@]}" "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

# uwsgi_app NAME PORT WSGI-SCRIPT [UWSGI ARGS...]: a uwsgi master with $PROCS worker processes
# of $THREADS threads each; uwsgi writes the master's PID itself.
# "Connection: close" on every response: uwsgi's --http-socket closes the connection after each
# response without saying so, and a client that reused it got "Connection reset by peer" (the
# openstack CLI did); --http11-socket still dropped some ("RemoteDisconnected"). Debian's own
# uwsgi ini files for neutron-api and placement-api add the same header.
uwsgi_app() {
  local name=$1 port=$2 wsgi=$3; shift 3
  running "$name" && return 0
  [ -f "$LOGS/$name.log" ] && mv "$LOGS/$name.log" "$LOGS/$name.log.old"
  "${NICE[@]}" uwsgi --plugins python3 --http-socket "$IP:$port" --add-header "Connection: close" \
    --wsgi-file "$wsgi" --master --processes "${PROCS:-1}" --threads "${THREADS:-4}" --enable-threads \
    --lazy-apps --die-on-term --buffer-size 65535 --need-app --procname-prefix-spaced "$name" \
    --pidfile "$RUN/$name.pid" --daemonize "$LOGS/$name.log" "$@"
}

# wait_until NAME SECONDS COMMAND...: until COMMAND succeeds; fails early if NAME died.
wait_until() {
  local name=$1 limit=$2 t0; shift 2
  t0=$(now_ms)
  until "$@" >/dev/null 2>&1; do
    if (($(now_ms) - t0 > limit * 1000)); then
      log "$name: not ready after ${limit}s; end of its log:"; tail -20 "$LOGS/$name.log" >&2; return 1
    fi
    if (($(now_ms) - t0 > 3000)) && ! running "$name"; then
      log "$name died; end of its log:"; tail -20 "$LOGS/$name.log" >&2; return 1
    fi
    sleep 0.5
  done
  log "   $name ready after $(secs $(($(now_ms) - t0)))"
}
http_ok() { curl -s -o /dev/null -m 5 "$1"; }
tcp_open() { (exec 3<>"/dev/tcp/$IP/$1") 2>/dev/null; }
log_has() { grep -q "$2" "$LOGS/$1.log"; }

start_mariadb() {
  daemon mariadb mariadbd --defaults-file="$ETC/my.cnf"
  wait_until mariadb 60 mariadb-admin --defaults-file="$ETC/my.cnf" -uroot ping
}

# Erlang's port mapper, started by us on loopback before RabbitMQ: RabbitMQ would otherwise
# start one of its own, detached, that `stop` could not find by a PID file.
start_epmd() {
  local epmd
  epmd=$(ls /usr/lib/erlang/erts-*/bin/epmd 2>/dev/null | head -1) || true
  [ -n "$epmd" ] || epmd=$(command -v epmd)
  daemon epmd env ERL_EPMD_ADDRESS=$IP "$epmd" -port $EPMD_PORT
  wait_until epmd 20 tcp_open $EPMD_PORT
}

start_rabbitmq() {
  # inet_dist_use_interface: the distribution port on loopback too; +S 1:1 and no busy-waiting:
  # one scheduler thread that sleeps when idle, on a shared two-core machine.
  daemon rabbitmq env HOME="$STATE/rabbitmq" RABBITMQ_NODENAME=rabbit@localhost \
    RABBITMQ_CONFIG_FILE="$ETC/rabbitmq/rabbitmq.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$ETC/rabbitmq/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$STATE/rabbitmq/mnesia" RABBITMQ_LOG_BASE="$LOGS/rabbitmq-logs" \
    ERL_EPMD_ADDRESS=$IP ERL_EPMD_PORT=$EPMD_PORT RABBITMQ_DIST_PORT=$RABBIT_DIST_PORT \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} +S 1:1 +sbwt none +sbwtdcpu none +sbwtdio none" \
    /usr/lib/rabbitmq/bin/rabbitmq-server
}

start_redis() {
  mkdir -p "$STATE/redis"
  daemon redis redis-server --bind $IP --port $REDIS_PORT --dir "$STATE/redis" --save '' --appendonly no
  wait_until redis 30 redis-cli -h $IP -p $REDIS_PORT ping
}

start_keystone() {
  uwsgi_app keystone $KEYSTONE_PORT /usr/bin/keystone-wsgi-public \
    --env OS_KEYSTONE_CONFIG_DIR="$ETC/keystone" --env OS_KEYSTONE_CONFIG_FILES=keystone.conf
  wait_until keystone 180 http_ok "$AUTH_URL"
}

start_placement() {
  uwsgi_app placement $PLACEMENT_PORT /usr/bin/placement-api --env OS_PLACEMENT_CONFIG_DIR="$ETC/placement"
}
start_glance() { daemon glance-api glance-api --config-file "$ETC/glance/glance-api.conf"; }
start_neutron() {
  uwsgi_app neutron-api $NEUTRON_PORT /usr/bin/neutron-api \
    --env OS_NEUTRON_CONFIG_DIR="$ETC/neutron" --env "OS_NEUTRON_CONFIG_FILES=neutron.conf;ml2_conf.ini"
}
start_nova_api() {
  PROCS=2 THREADS=1 uwsgi_app nova-api $NOVA_PORT /usr/bin/nova-api-wsgi --env OS_NOVA_CONFIG_DIR="$ETC/nova"
}
start_nova_daemons() {
  daemon nova-conductor nova-conductor --config-file "$ETC/nova/nova.conf"
  daemon nova-scheduler nova-scheduler --config-file "$ETC/nova/nova.conf"
  # the nova-compute package's entry point, from python3-nova (the package pulls libvirt)
  daemon nova-compute $PY -c 'import sys; sys.argv[0] = "nova-compute"; from nova.cmd.compute import main; sys.exit(main())' \
    --config-file "$ETC/nova/nova.conf"
}
start_octavia() {
  uwsgi_app octavia-api $OCTAVIA_PORT /usr/bin/octavia-wsgi --pyargv "--config-file $ETC/octavia/octavia-api.conf"
  daemon octavia-worker octavia-worker --config-file "$ETC/octavia/octavia-worker.conf"
}
wait_octavia() {
  wait_until octavia-api 240 http_ok "http://$IP:$OCTAVIA_PORT/"
  wait_until octavia-worker 240 log_has octavia-worker 'Starting V2 consumer'
}

# A port of ours taken by a process that is not ours (another stack, a distribution's own
# MariaDB or RabbitMQ): say so, rather than wait for a service that cannot bind.
check_ports_free() {
  local s port svc
  for s in mariadb:$MARIADB_PORT redis:$REDIS_PORT epmd:$EPMD_PORT rabbitmq:$RABBIT_PORT \
    keystone:$KEYSTONE_PORT placement:$PLACEMENT_PORT glance-api:$GLANCE_PORT \
    neutron-api:$NEUTRON_PORT nova-api:$NOVA_PORT octavia-api:$OCTAVIA_PORT; do
    svc=${s%%:*} port=${s#*:}
    if ! running "$svc" && tcp_open "$port"; then
      die "port $port ($svc) is taken by another process: $(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:.*' | head -1)"
    fi
  done
}

cmd_start() {
  [ -f "$STATE/configured" ] || die "not configured: run '$0 configure' (or '$0 up')"
  check_run_path
  check_ports_free
  mkdir -p "$RUN/lock"
  running mariadb || start_mariadb
  running redis || start_redis
  running epmd || start_epmd
  start_rabbitmq
  running keystone || start_keystone
  wait_until rabbitmq 120 tcp_open $RABBIT_PORT
  # everything else side by side; then wait for each one
  start_placement; start_glance; start_neutron; start_nova_api; start_nova_daemons; start_octavia
  wait_until placement 240 http_ok "http://$IP:$PLACEMENT_PORT/"
  wait_until glance-api 240 http_ok "http://$IP:$GLANCE_PORT/"
  wait_until neutron-api 240 http_ok "http://$IP:$NEUTRON_PORT/"
  wait_until nova-api 240 http_ok "http://$IP:$NOVA_PORT/"
  wait_until nova-conductor 240 log_has nova-conductor 'Starting conductor node\|Creating RPC server for service conductor'
  wait_until nova-scheduler 240 log_has nova-scheduler 'Starting scheduler node\|Creating RPC server for service scheduler'
  wait_until nova-compute 240 log_has nova-compute 'Starting compute node'
  wait_octavia
}

# stop_one NAME: SIGTERM; SIGKILL to it and its descendants after $STOP_TIMEOUT seconds.
stop_one() {
  local name=$1 pid n kids
  pid=$(pid_of "$name") || return 0
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kids=$(descendants "$pid")
    kill -TERM "$pid" 2>/dev/null || true
    for ((n = 0; n < STOP_TIMEOUT * 10; n++)); do alive $kids || break; sleep 0.1; done
    if alive $kids; then
      log "   $name ($pid): still running after ${STOP_TIMEOUT}s, SIGKILL"
      kill -KILL $kids 2>/dev/null || true
    fi
    log "   stopped $name ($pid)"
  fi
  rm -f "$RUN/$name.pid"
}
alive() { local p; for p; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }

# Stopped a tier at a time, each tier's services side by side: the consumers, then the APIs,
# then Keystone, then the message bus and Redis, then epmd and MariaDB.
STOP_TIERS=("octavia-worker nova-compute nova-scheduler nova-conductor"
  "octavia-api nova-api neutron-api glance-api placement" keystone "rabbitmq redis" "epmd mariadb")

cmd_stop() {
  [ -d "$RUN" ] || return 0
  local tier name f
  for tier in "${STOP_TIERS[@]}"; do
    for name in $tier; do stop_one "$name" & done
    wait
  done
  for f in "$RUN"/*.pid; do [ -e "$f" ] && stop_one "$(basename "$f" .pid)"; done
  return 0
}

# status: RSS adds up every process's resident pages (shared library pages of a uwsgi master and
# its workers are counted once per process); PSS shares them out and is what the machine pays.
mem_of() { # mem_of PID: "RSS_KiB PSS_KiB" of PID and its descendants
  local p rss=0 pss=0 r s
  for p in $(descendants "$1"); do
    r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null) || r=0
    s=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null) || s=0
    rss=$((rss + ${r:-0})) pss=$((pss + ${s:-0}))
  done
  echo "$rss $pss"
}

cmd_status() {
  local name pid rss pss n trss=0 tpss=0 dead=0
  printf '%-16s %8s %6s %9s %9s\n' SERVICE PID PROCS RSS_MiB PSS_MiB
  for name in "${SERVICES[@]}"; do
    pid=$(pid_of "$name") || { printf '%-16s %8s\n' "$name" "-"; continue; }
    if ! kill -0 "$pid" 2>/dev/null; then printf '%-16s %8s DEAD\n' "$name" "$pid"; dead=1; continue; fi
    read -r rss pss <<<"$(mem_of "$pid")"
    n=$(descendants "$pid" | wc -l)
    printf '%-16s %8s %6s %9d %9d\n' "$name" "$pid" "$n" $((rss / 1024)) $((pss / 1024))
    trss=$((trss + rss)) tpss=$((tpss + pss))
  done
  printf '%-16s %8s %6s %9d %9d\n' TOTAL "" "" $((trss / 1024)) $((tpss / 1024))
  printf 'octavia mode: %s; state: %s\n' "$(octavia_mode)" "$STATE"
  return $dead
}

# ---------------------------------------------------------------------------------------------
# bootstrap, checks

bootstrap_py() {
  "${NICE[@]}" $PY "$HERE/bootstrap.py" "$@" --state "$STATE" --password "$PASSWORD" \
    --octavia-mode "$(octavia_mode)"
}

compute_node_known() { [ "$(sqlite3 "$DB/nova.sqlite" 'SELECT count(*) FROM compute_nodes' 2>/dev/null)" -gt 0 ]; }
map_compute_host() {
  wait_until nova-compute 180 compute_node_known
  "${NICE[@]}" nova-manage --config-file "$ETC/nova/nova.conf" cell_v2 discover_hosts
}

cmd_bootstrap() {
  # Once nova-compute has written its compute node, map its host into cell1: until then every
  # server create fails with NoValidHost (the scheduler maps new hosts too, but every 30 s).
  step "nova: map the compute host" map_compute_host
  step "networks, router, flavor, image, servers; ids.env, cloud.conf" bootstrap_py cloud
  write_openrc
}

write_openrc() {
  local u p
  for u in admin:admin k8s-ccm:kubernetes other-user:other; do
    p=${u#*:} u=${u%%:*}
    cat >"$STATE/openrc-$u" <<EOF
export OS_AUTH_URL=$AUTH_URL OS_USERNAME=$u OS_PASSWORD=$PASSWORD OS_PROJECT_NAME=$p
export OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default OS_IDENTITY_API_VERSION=3
export OS_REGION_NAME=$REGION OS_INTERFACE=public
EOF
  done
}

all_running() { local s; for s in "${SERVICES[@]}"; do running "$s" || return 1; done; }

# token USER PROJECT: a project-scoped token, by curl.
token() {
  curl -s -m 20 -D - -o /dev/null -H 'Content-Type: application/json' "$AUTH_URL/auth/tokens" -d "{\"auth\": {
    \"identity\": {\"methods\": [\"password\"], \"password\": {\"user\": {\"name\": \"$1\",
      \"domain\": {\"name\": \"Default\"}, \"password\": \"$PASSWORD\"}}},
    \"scope\": {\"project\": {\"name\": \"$2\", \"domain\": {\"name\": \"Default\"}}}}}" |
    awk 'tolower($1) == "x-subject-token:" { print $2 }' | tr -d '\r'
}

# verify: cheap checks (curl only) that the stack is up and usable by k8s-ccm.
cmd_verify() {
  local port tok code
  for port in $KEYSTONE_PORT $PLACEMENT_PORT $GLANCE_PORT $NOVA_PORT $NEUTRON_PORT $OCTAVIA_PORT; do
    http_ok "http://$IP:$port/" || die "nothing answers on $IP:$port"
  done
  [ -f "$STATE/ids.env" ] && [ -f "$STATE/cloud.conf" ] || die "not bootstrapped (no ids.env/cloud.conf)"
  tok=$(token k8s-ccm kubernetes)
  [ -n "$tok" ] || die "k8s-ccm cannot get a token"
  code=$(curl -s -o /dev/null -w '%{http_code}' -m 20 -H "X-Auth-Token: $tok" "http://$IP:$OCTAVIA_PORT/v2/lbaas/loadbalancers")
  [ "$code" = 200 ] || die "k8s-ccm: GET /v2/lbaas/loadbalancers answered $code"
  code=$(curl -s -m 20 -H "X-Auth-Token: $tok" "http://$IP:$NOVA_PORT/v2.1/servers/detail" | grep -o '"status": "ACTIVE"' | wc -l)
  [ "$code" -ge 2 ] || die "k8s-ccm sees $code ACTIVE servers, not 2"
  check_loopback
  log "verified: 6 APIs answer, k8s-ccm lists load balancers and sees 2 ACTIVE servers; all listeners on $IP"
}

# Every listening socket of our processes is on loopback.
check_loopback() {
  local pids="" s p bad
  for s in "${SERVICES[@]}"; do p=$(pid_of "$s") && pids+=" $(descendants "$p" | tr '\n' ' ')"; done
  bad=$(ss -Hltnup 2>/dev/null | awk -v pids=" $pids " '
    { if (match($0, /pid=[0-9]+/)) { p = substr($0, RSTART + 4, RLENGTH - 4); if (index(pids, " " p " ") && $5 !~ /^(127\.0\.0\.1|\[::1\]):/) print } }')
  [ -z "$bad" ] || { log "not on loopback:"; echo "$bad" >&2; return 1; }
}

# ---------------------------------------------------------------------------------------------
# Octavia mode switch

cmd_octavia_mode() {
  local mode=${1:-}
  [ -n "$mode" ] || { echo "$(octavia_mode)"; return 0; }
  octavia_mode_settings "$mode" >/dev/null
  [ -f "$STATE/configured" ] || die "not configured"
  write_octavia_confs "$mode"
  [ -f "$STATE/ids.env" ] && sed -i "s/^OCTAVIA_MODE=.*/OCTAVIA_MODE=$mode/" "$STATE/ids.env"
  # a stack that is up (Keystone answers) gets its Octavia restarted; a stopped one stays stopped
  if running keystone; then
    stop_one octavia-worker & stop_one octavia-api & wait
    start_octavia
    wait_octavia
  fi
  log "octavia mode: $mode"
}

# ---------------------------------------------------------------------------------------------
# up, env

cmd_up() {
  local t0 want=""
  t0=$(now_ms)
  step install cmd_install
  [ -f "$STATE/configured" ] || step configure cmd_configure
  # OCTAVIA_JOBBOARD given and different from the mode in force: switch (on a stopped stack
  # this only rewrites Octavia's two files).
  case ${OCTAVIA_JOBBOARD:-} in 1) want=jobboard ;; 0) want=plain ;; esac
  [ -z "$want" ] || [ "$want" = "$(octavia_mode)" ] || step "octavia mode $want" cmd_octavia_mode $want
  if all_running; then
    log "all ${#SERVICES[@]} services are running"
  else
    step start cmd_start
  fi
  [ -f "$STATE/ids.env" ] || step bootstrap cmd_bootstrap
  step verify cmd_verify
  cmd_status || true
  log "up: $(secs $(($(now_ms) - t0))) in all"
  cmd_env
}

cmd_env() {
  cat <<EOF
REALSTACK_DIR=$STATE
REALSTACK_CLOUD_CONF=$STATE/cloud.conf
REALSTACK_IDS_ENV=$STATE/ids.env
REALSTACK_OPENRC_ADMIN=$STATE/openrc-admin
REALSTACK_OPENRC_CCM=$STATE/openrc-k8s-ccm
REALSTACK_OPENRC_OTHER=$STATE/openrc-other-user
REALSTACK_LOGS=$LOGS
REALSTACK_OCTAVIA_MODE=$(octavia_mode)
EOF
}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

main() {
  local cmd=${1:-}
  [ $# -gt 0 ] && shift
  case $cmd in
    up) cmd_up ;;
    install) step install cmd_install ;;
    configure) step configure cmd_configure ;;
    start) step start cmd_start ;;
    stop) step stop cmd_stop ;;
    status) cmd_status ;;
    bootstrap) step bootstrap cmd_bootstrap ;;
    verify) cmd_verify ;;
    octavia-mode) if [ $# = 0 ]; then octavia_mode; else step "octavia-mode $1" cmd_octavia_mode "$1"; fi ;;
    reap) bootstrap_py reap ;;
    e2e) bash "$HERE/e2e.sh" "$@" ;;
    probe) "${NICE[@]}" $PY "$HERE/probe.py" --state "$STATE" && bootstrap_py reap ;;
    env) cmd_env ;;
    -h | --help | help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
