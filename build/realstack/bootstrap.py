#!/usr/bin/python3
"""realstack's bootstrap, through openstacksdk (python3-openstacksdk) in one process: each
openstack CLI command costs about two seconds of start-up here, this whole file about as much.
Every step looks first and creates only what is missing, so each subcommand can be run again.

  bootstrap.py identity --state DIR --password PW   projects, roles, users, services, endpoints
  bootstrap.py cloud    --state DIR --password PW   flavor, image, networks, router, servers;
                                                    writes DIR/ids.env and DIR/cloud.conf
  bootstrap.py reap     --state DIR --password PW   deletes VIP ports of deleted load balancers

Run by realstack.sh with Debian's /usr/bin/python3.
"""
import argparse
import os
import sys
import time

import openstack
import openstack.exceptions

IP = "127.0.0.1"
REGION = "RegionOne"
AUTH_URL = f"http://{IP}:5000/v3"
PORTS = {"KEYSTONE": 5000, "PLACEMENT": 8778, "GLANCE": 9292, "NOVA": 8774,
         "NEUTRON": 9696, "OCTAVIA": 9876}

# Octavia 11's shipped policy: "member" alone is refused 403 ("Policy does not allow this request
# to be performed.") on every call, a load balancer list included; load-balancer_member is needed.
TENANT_ROLES = ("member", "load-balancer_member")
# project -> user of that project with TENANT_ROLES. "other" is a second tenant, for tests that
# must not see (or touch) another project's objects.
TENANTS = {"kubernetes": "k8s-ccm", "other": "other-user"}
SERVICE_USERS = ("placement", "glance", "nova", "neutron", "octavia")
CATALOG = [  # name, type, URL
    ("placement", "placement", f"http://{IP}:8778"),
    ("glance", "image", f"http://{IP}:9292"),
    ("nova", "compute", f"http://{IP}:8774/v2.1"),
    ("neutron", "network", f"http://{IP}:9696"),
    ("octavia", "load-balancer", f"http://{IP}:9876"),
]
# Four: the conformance suite's hostile checks hold a victim cluster's two Nodes and an
# attacker's two at once (providers/openstack/realstack renames them as it needs).
SERVERS = ("node-1", "node-2", "node-3", "node-4")


def log(msg):
    print(f"[bootstrap {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def connect(password, user="admin", project="admin"):
    return openstack.connect(
        auth_url=AUTH_URL, username=user, password=password, project_name=project,
        user_domain_name="Default", project_domain_name="Default", region_name=REGION,
        interface="public", identity_api_version="3")


def by_name(objects):
    return {o.name: o for o in objects}


# ------------------------------------------------------------------------------------------
# Keystone answers in about a second a request on a busy machine (niced): one list per kind of
# object, then only the creates that are missing.
def identity(args):
    conn = connect(args.password)
    idn = conn.identity
    roles = by_name(idn.roles())
    for r in ("admin", "member", "reader",
              # "service": the APIs run keystonemiddleware with service_token_roles_required,
              # and nova sends Neutron a service token (even with send_service_user_token =
              # false); without this role on nova's user, Neutron answered 401 and every server
              # create failed.
              "service",
              "load-balancer_member", "load-balancer_observer", "load-balancer_admin",
              "load-balancer_global_observer", "load-balancer_quota_admin"):
        if r not in roles:
            roles[r] = idn.create_role(name=r)
    projects = by_name(idn.projects())
    for p in ("service", *TENANTS):
        if p not in projects:
            projects[p] = idn.create_project(name=p, domain_id="default")

    users = by_name(idn.users())
    wanted = [(u, "service", ("admin", "service")) for u in SERVICE_USERS]
    wanted += [(u, p, TENANT_ROLES) for p, u in TENANTS.items()]
    for name, project, role_names in wanted:
        if name not in users:
            users[name] = idn.create_user(name=name, password=args.password, domain_id="default",
                                          default_project_id=projects[project].id)
            # a new user has no roles; an old one keeps its own (PUTs, so no harm either way)
            for r in role_names:
                idn.assign_project_role_to_user(projects[project], users[name], roles[r])

    services = by_name(idn.services())
    have = {(e.service_id, e.interface) for e in idn.endpoints()}
    for name, stype, url in CATALOG:
        if name not in services:
            services[name] = idn.create_service(name=name, type=stype)
        for iface in ("public", "internal", "admin"):
            if (services[name].id, iface) not in have:
                idn.create_endpoint(service_id=services[name].id, interface=iface, url=url,
                                    region_id=REGION)
    log(f"identity: {len(list(idn.endpoints()))} endpoints, users {', '.join(users)}")


# ------------------------------------------------------------------------------------------
def flavor_and_image(conn, state):
    flavor = conn.compute.find_flavor("m1.small")
    if flavor is None:
        flavor = conn.compute.create_flavor(name="m1.small", vcpus=1, ram=2048, disk=10)
    image = conn.image.find_image("fake-image")
    if image is None:
        path = os.path.join(state, "fake-image.raw")
        with open(path, "wb") as f:  # the fake hypervisor never reads it
            f.write(b"\0" * 1024 * 1024)
        image = conn.image.create_image("fake-image", filename=path, disk_format="raw",
                                        container_format="bare", is_public=True, wait=True)
        log("created image fake-image")
    return flavor, image


def networks(conn, project_id):
    net = conn.network
    public = net.find_network("public") or net.create_network(
        name="public", is_router_external=True, provider_network_type="flat",
        provider_physical_network="public")
    public_subnet = net.find_subnet("public-subnet") or net.create_subnet(
        name="public-subnet", network_id=public.id, ip_version=4, cidr="172.24.4.0/24",
        gateway_ip="172.24.4.1", is_dhcp_enabled=False)
    k8s = net.find_network("k8s-net") or net.create_network(name="k8s-net", project_id=project_id)
    # no DHCP: there is no DHCP agent, and servers of the fake hypervisor do not ask
    k8s_subnet = net.find_subnet("k8s-subnet") or net.create_subnet(
        name="k8s-subnet", network_id=k8s.id, project_id=project_id, ip_version=4,
        cidr="10.0.0.0/24", is_dhcp_enabled=False)
    router = net.find_router("k8s-router")
    if router is None:
        router = net.create_router(name="k8s-router", project_id=project_id,
                                   external_gateway_info={"network_id": public.id})
    if not any(ip["subnet_id"] == k8s_subnet.id
               for p in net.ports(device_id=router.id) for ip in p.fixed_ips):
        net.add_interface_to_router(router, subnet_id=k8s_subnet.id)
    log("networks: public, k8s-net behind k8s-router")
    return public, public_subnet, k8s, k8s_subnet, router


# A build that goes ERROR is deleted and made again this many times in all. On a fresh machine a
# build has failed once in CI with no other sign of trouble (the other three went ACTIVE); the
# fault and the Nova log lines are printed so that a repeat can be told apart from a flake.
SERVER_ATTEMPTS = 3
NOVA_LOGS = ("nova-compute", "nova-conductor", "nova-scheduler")


def server_fault(admin, server_id):
    """The fault Nova recorded for a server in ERROR (admins see its details)."""
    # this openstacksdk's Server has no fault attribute: read Nova's own JSON
    fault = admin.compute.get(f"/servers/{server_id}").json()["server"].get("fault") or {}
    return f"{fault.get('code', '?')} {fault.get('message', 'no fault recorded')}"


def nova_errors(state, server_id, limit=12):
    """The last ERROR lines of Nova's services that name the server, or any ERROR lines."""
    lines = []
    for name in NOVA_LOGS:
        path = os.path.join(state, "log", f"{name}.log")
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            errors = [f"{name}: {line.rstrip()}" for line in f if " ERROR " in line]
        lines += [line for line in errors if server_id in line] or errors[-3:]
    return lines[-limit:]


def create_server(conn, name, flavor, image, network):
    s = conn.compute.create_server(name=name, flavor_id=flavor.id, image_id=image.id,
                                   networks=[{"uuid": network.id}])
    log(f"creating server {name}")
    return s


def servers(conn, admin, state, flavor, image, network):
    """SERVERS, as the tenant's user, on the fake hypervisor; their creates are in flight
    together. A server found or gone ERROR is deleted and created again."""
    pending = {}
    for name in SERVERS:
        s = conn.compute.find_server(name)
        if s is not None and conn.compute.get_server(s.id).status == "ERROR":
            conn.compute.delete_server(s)
            conn.compute.wait_for_delete(s)
            s = None
        pending[name] = s or create_server(conn, name, flavor, image, network)
    done = {}
    for attempt in range(1, SERVER_ATTEMPTS + 1):
        failed = []
        for name, s in pending.items():
            try:
                done[name] = conn.compute.wait_for_server(
                    s, status="ACTIVE", failures=["ERROR"], interval=1, wait=300)
                continue
            except openstack.exceptions.ResourceFailure:
                pass
            log(f"server {name} ({s.id}) went ERROR, attempt {attempt} of {SERVER_ATTEMPTS}: "
                f"{server_fault(admin, s.id)}")
            for line in nova_errors(state, s.id):
                log(f"   {line}")
            failed.append(name)
        if not failed:
            return [done[name] for name in SERVERS]
        if attempt == SERVER_ATTEMPTS:
            sys.exit(f"bootstrap: servers {', '.join(failed)} went ERROR {SERVER_ATTEMPTS} times")
        for name in failed:
            conn.compute.delete_server(pending[name])
            conn.compute.wait_for_delete(pending[name])
        pending = {name: create_server(conn, name, flavor, image, network) for name in failed}


def cloud(args):
    admin = connect(args.password)
    ccm = connect(args.password, "k8s-ccm", "kubernetes")
    projects = {p: admin.identity.find_project(p, ignore_missing=False)
                for p in ("admin", *TENANTS)}
    flavor, image = flavor_and_image(admin, args.state)
    public, public_subnet, k8s, k8s_subnet, router = networks(admin, projects["kubernetes"].id)
    nodes = servers(ccm, admin, args.state, flavor, image, k8s)
    # Neutron 21's L3 plugin "router" brings extraroute-atomic (PUT .../add_extraroutes).
    atomic = admin.network.find_extension("extraroute-atomic") is not None
    ids = {
        "AUTH_URL": AUTH_URL, "REGION": REGION,
        "ADMIN_PROJECT_ID": projects["admin"].id,
        "K8S_PROJECT_ID": projects["kubernetes"].id,
        "OTHER_PROJECT_ID": projects["other"].id,
        "CCM_USERNAME": "k8s-ccm", "OTHER_USERNAME": "other-user", "PASSWORD": args.password,
        "PUBLIC_NET_ID": public.id, "PUBLIC_SUBNET_ID": public_subnet.id,
        "K8S_NET_ID": k8s.id, "K8S_SUBNET_ID": k8s_subnet.id, "K8S_ROUTER_ID": router.id,
        "FLAVOR_ID": flavor.id, "IMAGE_ID": image.id,
    }
    for i, s in enumerate(nodes, 1):
        port = next(iter(admin.network.ports(device_id=s.id)))
        ids[f"NODE{i}_ID"] = s.id
        ids[f"NODE{i}_IP"] = port.fixed_ips[0]["ip_address"]
        ids[f"NODE{i}_PORT_ID"] = port.id
    ids.update({f"{k}_PORT": v for k, v in PORTS.items()})
    ids["EXTRAROUTE_ATOMIC"] = "true" if atomic else "false"
    ids["OCTAVIA_MODE"] = args.octavia_mode
    write(os.path.join(args.state, "ids.env"),
          "".join(f"{k}={v}\n" for k, v in ids.items()))
    write(os.path.join(args.state, "cloud.conf"), f"""[Global]
auth-url = {AUTH_URL}
username = k8s-ccm
password = "{args.password}"
tenant-name = kubernetes
domain-name = Default
region = {REGION}

[LoadBalancer]
subnet-id = {k8s_subnet.id}
floating-network-id = {public.id}
create-monitor = true
""")
    log(f"servers {', '.join(SERVERS)} ACTIVE; extraroute-atomic: {ids['EXTRAROUTE_ATOMIC']}")


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------------------
def reap(args):
    """octavia-worker runs network_noop_driver (see realstack.sh), which never deletes a VIP
    port: delete the ports named octavia-lb-<id> whose load balancer is gone."""
    conn = connect(args.password)
    n = 0
    for port in conn.network.ports(device_owner="Octavia"):
        if not (port.name or "").startswith("octavia-lb-"):
            continue
        lb_id = port.name[len("octavia-lb-"):]
        if conn.load_balancer.find_load_balancer(lb_id) is None:
            conn.network.delete_port(port)
            n += 1
    log(f"reap: deleted {n} VIP port(s) of deleted load balancers")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=("identity", "cloud", "reap"))
    p.add_argument("--state", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--octavia-mode", default="jobboard")
    args = p.parse_args()
    {"identity": identity, "cloud": cloud, "reap": reap}[args.command](args)


if __name__ == "__main__":
    main()
