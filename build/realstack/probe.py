#!/usr/bin/python3
"""realstack's probes: the exact HTTP answers of the real Octavia 11 and Neutron 21 to the
requests (good and bad) that ccm's OpenStack provider sends and that our fake must imitate.
Raw HTTP (python3-requests), as user k8s-ccm of project kubernetes, on a stack that is up and
bootstrapped. Prints each exchange and writes them all as JSON to STATE/probe-MODE.json.
FINDINGS.md beside this file is written from those files.

  realstack.sh probe      (or: bootstrap-free, /usr/bin/python3 probe.py --state DIR)

Everything it creates (load balancers "probe-*", floating IPs) is deleted at the end.
"""
import argparse
import json
import os
import sys
import time

import requests

IP = "127.0.0.1"
RESULTS = []


def log(msg):
    print(f"[probe {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k:
                env[k] = v
    return env


class Client:
    def __init__(self, ids, user, project):
        self.ids = ids
        r = requests.post(f"{ids['AUTH_URL']}/auth/tokens", json={"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"name": "Default"}, "password": ids["PASSWORD"]}}},
            "scope": {"project": {"name": project, "domain": {"name": "Default"}}}}}, timeout=60)
        r.raise_for_status()
        self.token = r.headers["X-Subject-Token"]
        self.octavia = f"http://{IP}:{ids['OCTAVIA_PORT']}/v2/lbaas"
        self.neutron = f"http://{IP}:{ids['NEUTRON_PORT']}/v2.0"

    def call(self, title, method, url, body=None, record=True):
        r = requests.request(method, url, json=body, timeout=120,
                             headers={"X-Auth-Token": self.token})
        try:
            answer = r.json()
        except ValueError:
            answer = r.text
        if record:
            path = url.split(":", 2)[2].split("/", 1)[1]
            RESULTS.append({"title": title, "method": method, "path": "/" + path,
                            "request": body, "status": r.status_code, "body": answer})
            log(f"{title}: {method} /{path} -> {r.status_code} {short(answer)}")
        return r.status_code, answer

    def get(self, url):
        return self.call("", "GET", url, record=False)[1]

    def wait_lb(self, lb_id, limit=180):
        t0 = time.time()
        while time.time() - t0 < limit:
            s = self.get(f"{self.octavia}/loadbalancers/{lb_id}")["loadbalancer"]["provisioning_status"]
            if s in ("ACTIVE", "ERROR"):
                return s
            time.sleep(0.5)
        raise RuntimeError(f"load balancer {lb_id} not ACTIVE after {limit}s")

    def tree(self, lb_id):
        """provisioning_status of the load balancer and everything under it"""
        out = []

        def walk(o, kind):
            for k, v in o.items():
                for x in (v if isinstance(v, list) else [v] if isinstance(v, dict) else []):
                    if "provisioning_status" in x:
                        out.append(f"{k.rstrip('s')} {x.get('name') or x.get('address') or x.get('id')}"
                                   f": {x['provisioning_status']}")
                    walk(x, k)
        walk(self.get(f"{self.octavia}/loadbalancers/{lb_id}/status"), "")
        return out

    def note(self, title, value):
        RESULTS.append({"title": title, "note": value})
        log(f"{title}: {value}")


def short(answer):
    s = json.dumps(answer) if not isinstance(answer, str) else answer
    return s if len(s) < 300 else s[:300] + "..."


def new_lb(c, name):
    st, body = c.call(f"create {name}", "POST", f"{c.octavia}/loadbalancers",
                      {"loadbalancer": {"name": name, "vip_subnet_id": c.ids["K8S_SUBNET_ID"]}},
                      record=False)
    assert st == 201, (st, body)
    lb = body["loadbalancer"]
    assert c.wait_lb(lb["id"]) == "ACTIVE"
    return lb


def listener_probes(c, lb):
    o, sub, ip = c.octavia, c.ids["K8S_SUBNET_ID"], c.ids["NODE1_IP"]
    pool = {"name": "probe-pool", "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN",
            "members": [{"address": ip, "protocol_port": 30080, "subnet_id": sub}],
            "healthmonitor": {"type": "TCP", "delay": 5, "timeout": 3, "max_retries": 1}}
    c.call("listener with an inline default_pool", "POST", f"{o}/listeners", {"listener": {
        "loadbalancer_id": lb["id"], "name": "probe-l81", "protocol": "TCP", "protocol_port": 81,
        "default_pool": pool}})
    c.note("load balancer after the inline default_pool POST",
           c.get(f"{o}/loadbalancers/{lb['id']}")["loadbalancer"]["provisioning_status"])
    c.note("listeners after the inline default_pool POST",
           [(x["name"], x["protocol_port"], x["provisioning_status"])
            for x in c.get(f"{o}/listeners?loadbalancer_id={lb['id']}")["listeners"]])

    st, body = c.call("plain listener TCP 80", "POST", f"{o}/listeners", {"listener": {
        "loadbalancer_id": lb["id"], "name": "probe-l80", "protocol": "TCP", "protocol_port": 80}})
    listener = body["listener"]
    c.wait_lb(lb["id"])

    c.call("(a) second listener on port 80 of the same load balancer", "POST", f"{o}/listeners",
           {"listener": {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}})
    for port in (0, 70000):
        c.call(f"(b) listener with protocol_port {port}", "POST", f"{o}/listeners",
               {"listener": {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": port}})
    for cidrs in (["10.0.0.0/33"], ["not-a-cidr"], ["10.0.0.1/24"]):
        st, body = c.call(f"(c) listener with allowed_cidrs {cidrs}", "POST", f"{o}/listeners",
                          {"listener": {"loadbalancer_id": lb["id"], "protocol": "TCP",
                                        "protocol_port": 82, "allowed_cidrs": cidrs}})
        if st == 201:
            c.wait_lb(lb["id"])
            c.note(f"(c) allowed_cidrs stored for {cidrs}",
                   c.get(f"{o}/listeners/{body['listener']['id']}")["listener"]["allowed_cidrs"])
            c.call("", "DELETE", f"{o}/listeners/{body['listener']['id']}", record=False)
            c.wait_lb(lb["id"])
    c.call("(c) PUT listener allowed_cidrs bad CIDR", "PUT", f"{o}/listeners/{listener['id']}",
           {"listener": {"allowed_cidrs": ["300.0.0.0/8"]}})

    c.call("PUT listener allowed_cidrs in place", "PUT", f"{o}/listeners/{listener['id']}",
           {"listener": {"allowed_cidrs": ["192.0.2.0/24", "198.51.100.0/24"]}})
    # (d): the PUT above left the load balancer PENDING_UPDATE; write again at once
    c.note("(d) load balancer status right after the PUT",
           c.get(f"{o}/loadbalancers/{lb['id']}")["loadbalancer"]["provisioning_status"])
    c.call("(d) listener POST while the load balancer is PENDING_UPDATE", "POST", f"{o}/listeners",
           {"listener": {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 83}})
    c.call("(d) listener PUT while the load balancer is PENDING_UPDATE", "PUT",
           f"{o}/listeners/{listener['id']}", {"listener": {"description": "x"}})
    c.wait_lb(lb["id"])
    got = c.get(f"{o}/listeners/{listener['id']}")["listener"]
    c.note("listener after the allowed_cidrs PUT",
           {"allowed_cidrs": got["allowed_cidrs"], "provisioning_status": got["provisioning_status"],
            "id unchanged": got["id"] == listener["id"]})
    c.call("PUT listener allowed_cidrs null (clear)", "PUT", f"{o}/listeners/{listener['id']}",
           {"listener": {"allowed_cidrs": None}})
    c.wait_lb(lb["id"])
    c.note("listener after allowed_cidrs null", c.get(f"{o}/listeners/{listener['id']}")["listener"]["allowed_cidrs"])
    return listener, pool


def pool_probes(c, lb, listener, pool):
    o = c.octavia
    st, body = c.call("pool with inline members and healthmonitor on an existing listener", "POST",
                      f"{o}/pools", {"pool": dict(pool, listener_id=listener["id"])})
    if st == 201:
        p = body["pool"]
        c.wait_lb(lb["id"])
        time.sleep(3)  # give children time to leave PENDING_CREATE, if they ever do
        c.note("tree after the pool POST with inline members and monitor", c.tree(lb["id"]))
    else:
        c.note("after that refused pool POST: load balancer, pools", (
            c.get(f"{o}/loadbalancers/{lb['id']}")["loadbalancer"]["provisioning_status"],
            [x["name"] for x in c.get(f"{o}/pools?loadbalancer_id={lb['id']}")["pools"]]))
        # the same one call at a time, as ccm does it without inline children
        plain = {k: v for k, v in pool.items() if k not in ("members", "healthmonitor")}
        p = c.call("pool POST without children", "POST", f"{o}/pools",
                   {"pool": dict(plain, listener_id=listener["id"])})[1]["pool"]
        c.wait_lb(lb["id"])
        c.call("member POST", "POST", f"{o}/pools/{p['id']}/members", {"member": pool["members"][0]})
        c.wait_lb(lb["id"])
        c.call("healthmonitor POST", "POST", f"{o}/healthmonitors",
               {"healthmonitor": dict(pool["healthmonitor"], pool_id=p["id"])})
        c.wait_lb(lb["id"])
        c.call("(a') second healthmonitor on the same pool", "POST", f"{o}/healthmonitors",
               {"healthmonitor": dict(pool["healthmonitor"], pool_id=p["id"])})
        c.note("tree after pool, member and monitor one at a time", c.tree(lb["id"]))
    c.note("members of that pool", [(m["address"], m["provisioning_status"], m["operating_status"])
                                     for m in c.get(f"{o}/pools/{p['id']}/members")["members"]])
    c.call("batch member update (PUT /pools/{id}/members): node-2 instead of node-1", "PUT",
           f"{o}/pools/{p['id']}/members", {"members": [{
               "address": c.ids["NODE2_IP"], "protocol_port": 30080, "subnet_id": c.ids["K8S_SUBNET_ID"]}]})
    c.wait_lb(lb["id"])
    c.note("members after the batch update", [(m["address"], m["provisioning_status"])
                                              for m in c.get(f"{o}/pools/{p['id']}/members")["members"]])
    c.call("DELETE load balancer with children, without cascade", "DELETE", f"{o}/loadbalancers/{lb['id']}")
    return p


def fully_populated_probe(c):
    o, sub, ip = c.octavia, c.ids["K8S_SUBNET_ID"], c.ids["NODE1_IP"]
    listener = {"name": "probe-full-l80", "protocol": "TCP", "protocol_port": 80, "default_pool": {
        "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN",
        "members": [{"address": ip, "protocol_port": 30080, "subnet_id": sub}],
        "healthmonitor": {"type": "TCP", "delay": 5, "timeout": 3, "max_retries": 1}}}
    c.call("fully populated create with an unnamed pool", "POST", f"{o}/loadbalancers", {"loadbalancer": {
        "name": "probe-full-unnamed", "vip_subnet_id": sub, "listeners": [listener]}})
    listener["default_pool"]["name"] = "probe-full-pool"
    t0 = time.time()
    st, body = c.call("fully populated create (listener, named pool, member, monitor)", "POST",
                      f"{o}/loadbalancers", {"loadbalancer": {"name": "probe-full", "vip_subnet_id": sub,
                                                              "listeners": [listener]}})
    lb = body["loadbalancer"]
    c.note("fully populated create: load balancer status", c.wait_lb(lb["id"]))
    c.note("fully populated create: POST to ACTIVE, seconds", round(time.time() - t0, 1))
    time.sleep(5)
    tree = c.tree(lb["id"])
    c.note("fully populated create: tree 5 s after ACTIVE", tree)
    pools = c.get(f"{o}/pools?loadbalancer_id={lb['id']}")["pools"]
    if pools:
        c.call("batch member update on the fully populated create's pool", "PUT",
               f"{o}/pools/{pools[0]['id']}/members", {"members": []})
        c.wait_lb(lb["id"])
    return lb


def neutron_probes(c, lb):
    n, pub = c.neutron, c.ids["PUBLIC_NET_ID"]
    vip_port = lb["vip_port_id"]
    st, body = c.call("floating IP on the VIP port", "POST", f"{n}/floatingips", {"floatingip": {
        "floating_network_id": pub, "port_id": vip_port}})
    fips = [body["floatingip"]["id"]] if st == 201 else []
    st, body = c.call("(e) second floating IP on the same fixed IP", "POST", f"{n}/floatingips",
                      {"floatingip": {"floating_network_id": pub, "port_id": vip_port}})
    if st == 201:
        fips.append(body["floatingip"]["id"])
    st, body = c.call("(e') a free floating IP", "POST", f"{n}/floatingips",
                      {"floatingip": {"floating_network_id": pub}})
    if st == 201:
        fips.append(body["floatingip"]["id"])
        c.call("(e') associate it with the fixed IP that has one (PUT)", "PUT",
               f"{n}/floatingips/{body['floatingip']['id']}", {"floatingip": {"port_id": vip_port}})
    for name, port in (("node-1's port", c.ids["NODE1_PORT_ID"]), ("VIP port", vip_port)):
        got = c.get(f"{n}/ports/{port}")["port"]
        c.note(f"(f) {name}: port security fields",
               {k: got.get(k, "<absent>") for k in ("port_security_enabled", "security_groups",
                                                     "allowed_address_pairs", "status", "device_owner",
                                                     "binding:vif_type")})
    c.call("(f) PUT port_security_enabled false with security groups still on", "PUT",
           f"{n}/ports/{c.ids['NODE1_PORT_ID']}", {"port": {"port_security_enabled": False}})
    c.call("GET a port that does not exist", "GET", f"{n}/ports/00000000-0000-0000-0000-000000000000")
    return fips


def other_tenant_probe(ids, lb):
    other = Client(ids, "other-user", "other")
    other.call("other tenant: GET the kubernetes project's load balancer", "GET",
               f"{other.octavia}/loadbalancers/{lb['id']}")
    other.call("other tenant: load balancer on the kubernetes project's subnet", "POST",
               f"{other.octavia}/loadbalancers",
               {"loadbalancer": {"name": "probe-other", "vip_subnet_id": ids["K8S_SUBNET_ID"]}})


def cleanup(c):
    for fip in c.get(f"{c.neutron}/floatingips")["floatingips"]:
        c.call("", "DELETE", f"{c.neutron}/floatingips/{fip['id']}", record=False)
    lbs = [x for x in c.get(f"{c.octavia}/loadbalancers")["loadbalancers"]
           if x["name"].startswith("probe-")]
    for lb in lbs:
        if lb["provisioning_status"].startswith("PENDING"):
            try:
                c.wait_lb(lb["id"], 60)
            except RuntimeError:
                pass
        c.call("", "DELETE", f"{c.octavia}/loadbalancers/{lb['id']}?cascade=true", record=False)
    t0 = time.time()
    while time.time() - t0 < 180 and any(x["name"].startswith("probe-") for x in
                                         c.get(f"{c.octavia}/loadbalancers")["loadbalancers"]):
        time.sleep(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--state", required=True)
    args = p.parse_args()
    ids = read_env(os.path.join(args.state, "ids.env"))
    mode = open(os.path.join(args.state, "octavia-mode")).read().strip()
    c = Client(ids, "k8s-ccm", "kubernetes")
    try:
        lb = new_lb(c, "probe-a")
        c.call("GET a load balancer that does not exist", "GET",
               f"{c.octavia}/loadbalancers/00000000-0000-0000-0000-000000000000")
        listener, pool = listener_probes(c, lb)
        pool_probes(c, lb, listener, pool)
        fully_populated_probe(c)
        c.fips = neutron_probes(c, lb)
        other_tenant_probe(ids, lb)
    finally:
        out = os.path.join(args.state, f"probe-{mode}.json")
        with open(out, "w") as f:
            json.dump({"mode": mode, "results": RESULTS}, f, indent=1)
        log(f"wrote {out}; cleaning up")
        cleanup(c)


if __name__ == "__main__":
    main()
