#!/usr/bin/env bash
# realstack's end-to-end check with the openstack CLI, as the cluster's user (k8s-ccm in project
# kubernetes): what ccm's OpenStack provider does to a Service of type LoadBalancer, one call at a
# time, then a fully populated create (one POST, as ccm sends it), then everything deleted.
# Run by `realstack.sh e2e` on a stack that is up and bootstrapped; works in both Octavia modes
# and says what it saw (children of a fully populated create stay PENDING_CREATE in "plain").
set -euo pipefail
# (no `| head` after an openstack command: with pipefail its SIGPIPE would end the script)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${REALSTACK_DIR:-$(cd "$HERE/../.." && pwd)/bin/realstack}
export PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
. "$STATE/ids.env"
. "$STATE/openrc-k8s-ccm"
OCTAVIA=http://127.0.0.1:$OCTAVIA_PORT/v2/lbaas
MODE=$(cat "$STATE/octavia-mode")
NAME=e2e-$$

say() { echo "== $(date +%T) $*"; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }
secs() { printf '%d.%01ds' $(($1 / 1000)) $((($1 % 1000) / 100)); }
os() { openstack "$@"; }

# wait_lb LB: until the load balancer is ACTIVE (Octavia refuses writes while it is PENDING_*)
wait_lb() {
  local s t0
  t0=$(now_ms)
  while :; do
    s=$(os loadbalancer show "$1" -f value -c provisioning_status)
    [ "$s" = ACTIVE ] && break
    [ "$s" = ERROR ] && { echo "load balancer $1 went ERROR"; return 1; }
    (($(now_ms) - t0 < 180000)) || { echo "load balancer $1 still $s after 180s"; return 1; }
    sleep 0.5
  done
  echo "   ACTIVE ($(secs $(($(now_ms) - t0))) of polling)"
}

# tree LB: the provisioning status of the load balancer and of everything under it
TREE_PY='
import json, sys
def walk(obj, depth):
    for key, val in obj.items():
        items = val if isinstance(val, list) else [val] if isinstance(val, dict) else []
        for x in items:
            if "provisioning_status" in x:
                label = x.get("name") or x.get("address") or x.get("id", "")
                print("   %s%s %s: %s" % ("  " * depth, key.rstrip("s"), label, x["provisioning_status"]))
            walk(x, depth + 1)
walk(json.load(sys.stdin), 0)
'
tree() { os loadbalancer status show "$1" | /usr/bin/python3 -c "$TREE_PY"; }

say "Octavia mode: $MODE; servers of project kubernetes:"
os server list -c Name -c Status -c Networks

say "load balancer $NAME on k8s-subnet"
t0=$(now_ms)
LB=$(os loadbalancer create --name "$NAME" --vip-subnet-id "$K8S_SUBNET_ID" -f value -c id)
wait_lb "$LB"
echo "   POST -> ACTIVE: $(secs $(($(now_ms) - t0))) (CLI start-up included)"
VIP_PORT=$(os loadbalancer show "$LB" -f value -c vip_port_id)

say "listener TCP 80";   os loadbalancer listener create --name "$NAME-l80" --protocol TCP --protocol-port 80 "$LB" -f value -c id; wait_lb "$LB"
say "pool";              os loadbalancer pool create --name "$NAME-p80" --listener "$NAME-l80" --protocol TCP --lb-algorithm ROUND_ROBIN -f value -c id; wait_lb "$LB"
say "member $NODE1_IP:30080"; os loadbalancer member create --address "$NODE1_IP" --protocol-port 30080 --subnet-id "$K8S_SUBNET_ID" "$NAME-p80" -f value -c id; wait_lb "$LB"
say "health monitor";    os loadbalancer healthmonitor create --name "$NAME-hm" --delay 5 --timeout 3 --max-retries 1 --type TCP "$NAME-p80" -f value -c id; wait_lb "$LB"
say "floating IP on the VIP port $VIP_PORT"
FIP=$(os floating ip create --port "$VIP_PORT" "$PUBLIC_NET_ID" -f value -c id)
os floating ip show "$FIP" -f value -c floating_ip_address -c fixed_ip_address -c status
tree "$LB"

say "fully populated create (one POST with listener, named pool, member, monitor; as ccm sends it)"
TOKEN=$(os token issue -f value -c id)
t0=$(now_ms)
FULL=$(curl -s -X POST -H "X-Auth-Token: $TOKEN" -H 'Content-Type: application/json' "$OCTAVIA/loadbalancers" -d "{
  \"loadbalancer\": {\"name\": \"$NAME-full\", \"vip_subnet_id\": \"$K8S_SUBNET_ID\", \"listeners\": [{
    \"name\": \"$NAME-full-l80\", \"protocol\": \"TCP\", \"protocol_port\": 80, \"default_pool\": {
      \"name\": \"$NAME-full-pool\", \"protocol\": \"TCP\", \"lb_algorithm\": \"ROUND_ROBIN\",
      \"members\": [{\"address\": \"$NODE1_IP\", \"protocol_port\": 30080, \"subnet_id\": \"$K8S_SUBNET_ID\"}],
      \"healthmonitor\": {\"type\": \"TCP\", \"delay\": 5, \"timeout\": 3, \"max_retries\": 1}}}]}}" |
  /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["loadbalancer"]["id"])')
wait_lb "$FULL"
echo "   POST -> ACTIVE: $(secs $(($(now_ms) - t0)))"
sleep 3 # children of a plain-mode create would have had time to go ACTIVE, if they ever did
STATUS=$(tree "$FULL")
echo "$STATUS"
if grep -q PENDING <<<"$STATUS"; then
  echo "   children left PENDING_CREATE (expected in plain mode: Octavia 11.0.0 without the jobboard)"
fi

say "delete: floating IP, then both load balancers with --cascade"
t0=$(now_ms)
os floating ip delete "$FIP"
os loadbalancer delete --cascade "$LB"
os loadbalancer delete --cascade "$FULL"
while os loadbalancer show "$LB" >/dev/null 2>&1 || os loadbalancer show "$FULL" >/dev/null 2>&1; do
  (($(now_ms) - t0 < 180000)) || { echo "not deleted after 180s"; exit 1; }
  sleep 0.5
done
echo "   gone after $(secs $(($(now_ms) - t0)))"
say "VIP ports left by the worker's noop network driver, then reaped"
OS_USERNAME=admin OS_PROJECT_NAME=admin os port list --device-owner Octavia -f value -c ID -c Name
bash "$HERE/realstack.sh" reap
say "e2e passed (mode $MODE)"
