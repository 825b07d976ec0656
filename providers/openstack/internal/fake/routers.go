package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Neutron routers as a route controller meets them: a router made by the operator, on one or
// more subnets, whose static routes (extraroute) send each node's pod CIDR to the node. The
// routes are changed by replacing the whole list (PUT, with If-Match for read-modify-write) or,
// with the extraroute-atomic extension, by adding and removing some; tags (standard-attr-tag)
// can mark the routes a cluster owns. The fake has no router ports: a router's interfaces are
// only the subnets it was added with.

type router struct {
	ID, Name string
	// Routes in the order stored: a PUT's order, additions appended.
	Routes []RouterRoute
	Tags   []string
	// Revision is Neutron's revision_number, bumped by every change to the router.
	Revision int
	// Subnets are the subnets of the router's interfaces: a nexthop must be in one of them.
	Subnets []string
}

// RouterRoute is one static route of a router: traffic to Destination (a CIDR) goes to NextHop.
type RouterRoute struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

// defaultMaxRoutes is Neutron's max_routes when not configured.
const defaultMaxRoutes = 30

func (c *Cloud) routerEndpoints(m *http.ServeMux) {
	m.HandleFunc("GET /network/v2.0/routers/{id}", c.op("neutron.GetRouter", c.getRouter))
	m.HandleFunc("PUT /network/v2.0/routers/{id}", c.op("neutron.UpdateRouter", c.updateRouter))
	m.HandleFunc("PUT /network/v2.0/routers/{id}/add_extraroutes", c.op("neutron.UpdateRouterAddExtraRoutes", c.changeExtraRoutes(true)))
	m.HandleFunc("PUT /network/v2.0/routers/{id}/remove_extraroutes", c.op("neutron.UpdateRouterRemoveExtraRoutes", c.changeExtraRoutes(false)))
	m.HandleFunc("GET /network/v2.0/routers/{id}/tags", c.op("neutron.ListRouterTags", c.listRouterTags))
	m.HandleFunc("PUT /network/v2.0/routers/{id}/tags/{tag}", c.op("neutron.UpdateRouterTag", c.addRouterTag))
	m.HandleFunc("DELETE /network/v2.0/routers/{id}/tags/{tag}", c.op("neutron.DeleteRouterTag", c.deleteRouterTag))
	m.HandleFunc("GET /network/v2.0/extensions", c.op("neutron.ListExtensions", c.listExtensions))
	m.HandleFunc("GET /network/v2.0/extensions/{alias}", c.op("neutron.GetExtension", c.getExtension))
}

// AddRouter creates a router with interfaces on subnetIDs (default the private subnet), as an
// operator would, and returns its ID.
func (c *Cloud) AddRouter(name string, subnetIDs ...string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(subnetIDs) == 0 {
		subnetIDs = []string{PrivateSubnetID}
	}
	rt := &router{ID: c.nextID("router"), Name: name, Subnets: slices.Clone(subnetIDs)}
	c.routers[rt.ID] = rt
	return rt.ID
}

// RouterRoutes are a router's routes in stored order (nil for no router).
func (c *Cloud) RouterRoutes(id string) []RouterRoute {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rt := c.routers[id]; rt != nil {
		return slices.Clone(rt.Routes)
	}
	return nil
}

// SetRouterRoutes replaces a router's routes as an operator at the console would, without the
// API's checks, bumping its revision.
func (c *Cloud) SetRouterRoutes(id string, routes []RouterRoute) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rt := c.routers[id]; rt != nil {
		rt.Routes = slices.Clone(routes)
		rt.Revision++
	}
}

// RouterTags are a router's tags, sorted (nil for no router).
func (c *Cloud) RouterTags(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rt := c.routers[id]; rt != nil {
		return sortedTags(rt.Tags)
	}
	return nil
}

// SetRouterTags replaces a router's tags as an operator would (a set: repeats count once),
// bumping its revision.
func (c *Cloud) SetRouterTags(id string, tags []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rt := c.routers[id]; rt != nil {
		rt.Tags = slices.Compact(sortedTags(tags))
		rt.Revision++
	}
}

// sortedTags is a sorted copy of tags, never nil.
func sortedTags(tags []string) []string {
	out := append([]string{}, tags...)
	sort.Strings(out)
	return out
}

// routerJSON is a router as Neutron shows it: routes and tags as arrays, never null.
func (c *Cloud) routerJSON(rt *router) map[string]any {
	return map[string]any{"id": rt.ID, "name": rt.Name, "status": "ACTIVE", "admin_state_up": true,
		"external_gateway_info": nil, "routes": append([]RouterRoute{}, rt.Routes...), "tags": sortedTags(rt.Tags),
		"revision_number": rt.Revision, "project_id": c.projectID(), "tenant_id": c.projectID()}
}

// routerOf is the router of the request's path, or nil after answering Neutron's 404.
// Callers hold c.mu.
func (c *Cloud) routerOf(w http.ResponseWriter, r *http.Request) *router {
	rt := c.routers[r.PathValue("id")]
	if rt == nil {
		writeNeutronErr(w, http.StatusNotFound, "RouterNotFound", fmt.Sprintf("Router %s could not be found", r.PathValue("id")))
	}
	return rt
}

func (c *Cloud) getRouter(w http.ResponseWriter, r *http.Request) {
	if rt := c.routerOf(w, r); rt != nil {
		writeJSON(w, http.StatusOK, map[string]any{"router": c.routerJSON(rt)})
	}
}

// updateRouter is PUT /routers/{id}: of its attributes only routes is modelled; given, it
// replaces the whole list once every route passed the checks.
func (c *Cloud) updateRouter(w http.ResponseWriter, r *http.Request) {
	rt := c.routerOf(w, r)
	if rt == nil || ifMatchRefused(w, r, rt.Revision) != 0 {
		return
	}
	var b struct {
		Router map[string]json.RawMessage `json:"router"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	if raw, ok := b.Router["routes"]; ok {
		var routes []RouterRoute // null is Neutron's empty list
		if err := json.Unmarshal(raw, &routes); err != nil {
			writeErr(w, http.StatusBadRequest, "malformed routes")
			return
		}
		// The API refuses a list naming a route twice; the atomic calls merge instead.
		routes, f := routesFormat(routes, true)
		if f == nil {
			f = c.routesFit(rt, routes)
		}
		if f != nil {
			f.write(w)
			return
		}
		rt.Routes = routes
	}
	rt.Revision++
	writeJSON(w, http.StatusOK, map[string]any{"router": c.routerJSON(rt)})
}

// changeExtraRoutes is PUT /routers/{id}/add_extraroutes (add) or remove_extraroutes: the
// routes given are added where missing, or removed where present, in one step, so writers
// that each own some routes do not overwrite each other. Unknown without extraroute-atomic.
func (c *Cloud) changeExtraRoutes(add bool) opFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.opts.NoExtraRouteAtomic {
			writeErr(w, http.StatusNotFound, "The resource could not be found.")
			return
		}
		rt := c.routerOf(w, r)
		if rt == nil {
			return
		}
		var b struct {
			Router struct {
				Routes []RouterRoute `json:"routes"`
			} `json:"router"`
		}
		if err := decode(r, &b); err != nil {
			writeErr(w, http.StatusBadRequest, "malformed request")
			return
		}
		given, f := routesFormat(b.Router.Routes, false)
		if f != nil {
			f.write(w)
			return
		}
		next := slices.Clone(rt.Routes)
		for _, x := range given {
			i := slices.Index(next, x)
			if add && i < 0 {
				next = append(next, x)
			} else if !add && i >= 0 {
				next = slices.Delete(next, i, i+1)
			}
		}
		if add {
			if f := c.routesFit(rt, next); f != nil {
				f.write(w)
				return
			}
		}
		if !slices.Equal(next, rt.Routes) {
			rt.Routes = next
			rt.Revision++
		}
		writeJSON(w, http.StatusOK, map[string]any{"router": c.routerJSON(rt)})
	}
}

// routesFormat is the API's check of routes: each destination a network CIDR (no host bits,
// not loopback), each nexthop an address. The routes come back in canonical text, as Neutron
// stores them, and without repeats; a repeat is refused when refuseRepeats.
func routesFormat(routes []RouterRoute, refuseRepeats bool) ([]RouterRoute, *refusal) {
	out := make([]RouterRoute, 0, len(routes))
	for _, x := range routes {
		p, err := netip.ParsePrefix(x.Destination)
		switch {
		case err != nil:
			return nil, invalidInput("routes", fmt.Sprintf("'%s' is not a valid CIDR", x.Destination))
		case p != p.Masked():
			return nil, invalidInput("routes", fmt.Sprintf("'%s' is not a recognized CIDR, '%s' is recommended", x.Destination, p.Masked()))
		case p.Addr().IsLoopback():
			return nil, invalidInput("routes", fmt.Sprintf("'%s' is not a routable CIDR", x.Destination))
		}
		a, err := netip.ParseAddr(x.NextHop)
		if err != nil || a.Zone() != "" {
			return nil, invalidInput("routes", fmt.Sprintf("'%s' is not a valid IP address", x.NextHop))
		}
		canon := RouterRoute{Destination: p.String(), NextHop: a.String()}
		if slices.Contains(out, canon) {
			if refuseRepeats {
				return nil, invalidInput("routes", "Duplicate hostroute "+pyRoute(x))
			}
			continue
		}
		out = append(out, canon)
	}
	return out, nil
}

// routesFit is the router's check of the routes it would hold: every nexthop in the CIDR of
// one of its interface subnets, and no more routes than max_routes.
func (c *Cloud) routesFit(rt *router, routes []RouterRoute) *refusal {
	var cidrs []netip.Prefix
	for _, id := range rt.Subnets {
		if s := c.subnets[id]; s != nil {
			if p, err := netip.ParsePrefix(s.CIDR); err == nil {
				cidrs = append(cidrs, p)
			}
		}
	}
	for _, x := range routes {
		hop := netip.MustParseAddr(x.NextHop) // checked by routesFormat
		if !slices.ContainsFunc(cidrs, func(p netip.Prefix) bool { return p.Contains(hop) }) {
			all := make([]string, len(routes))
			for i, y := range routes {
				all[i] = pyRoute(y)
			}
			return &refusal{http.StatusBadRequest, "InvalidRoutes",
				fmt.Sprintf("Invalid format for routes: [%s], the nexthop is not connected with router.", strings.Join(all, ", "))}
		}
	}
	limit := c.opts.MaxRoutes
	if limit == 0 {
		limit = defaultMaxRoutes
	}
	if limit > 0 && len(routes) > limit {
		return &refusal{http.StatusBadRequest, "RoutesExhausted",
			fmt.Sprintf("Unable to complete operation for %s. The number of routes exceeds the maximum %d.", rt.ID, limit)}
	}
	return nil
}

// pyRoute is a route as Neutron's messages print it (a Python dict).
func pyRoute(x RouterRoute) string {
	return fmt.Sprintf("{'destination': '%s', 'nexthop': '%s'}", x.Destination, x.NextHop)
}

func (c *Cloud) listRouterTags(w http.ResponseWriter, r *http.Request) {
	if rt := c.routerOf(w, r); rt != nil {
		writeJSON(w, http.StatusOK, map[string]any{"tags": sortedTags(rt.Tags)})
	}
}

// addRouterTag is PUT /routers/{id}/tags/{tag}: 201 whether the tag is new or not (a set).
func (c *Cloud) addRouterTag(w http.ResponseWriter, r *http.Request) {
	rt := c.routerOf(w, r)
	if rt == nil {
		return
	}
	tag := r.PathValue("tag") // unescaped by the mux
	if n := utf8.RuneCountInString(tag); n < 1 || n > 255 {
		invalidInput("tag", fmt.Sprintf("'%s' is not between 1 and 255 characters", tag)).write(w)
		return
	}
	if !slices.Contains(rt.Tags, tag) {
		rt.Tags = append(rt.Tags, tag)
		rt.Revision++
	}
	w.WriteHeader(http.StatusCreated)
}

func (c *Cloud) deleteRouterTag(w http.ResponseWriter, r *http.Request) {
	rt := c.routerOf(w, r)
	if rt == nil {
		return
	}
	tag := r.PathValue("tag")
	i := slices.Index(rt.Tags, tag)
	if i < 0 {
		writeNeutronErr(w, http.StatusNotFound, "TagNotFound", fmt.Sprintf("Tag %s could not be found.", tag))
		return
	}
	rt.Tags = slices.Delete(rt.Tags, i, i+1)
	rt.Revision++
	w.WriteHeader(http.StatusNoContent)
}

// extensions are the Neutron extensions the fake's routers model, as Neutron describes them
// to a client deciding which calls it may use. Callers hold c.mu.
func (c *Cloud) extensions() []map[string]any {
	var out []map[string]any
	for _, e := range [][3]string{
		{"extraroute", "Extra routes", "Static routes on routers."},
		{"extraroute-atomic", "Atomic extra routes", "Adding and removing some of a router's routes in one call."},
		{"standard-attr-tag", "Tags on standard attribute resources", "Tags on resources that have standard attributes, routers among them."},
	} {
		if e[0] == "extraroute-atomic" && c.opts.NoExtraRouteAtomic {
			continue
		}
		out = append(out, map[string]any{"alias": e[0], "name": e[1], "description": e[2],
			"updated": "2019-07-10T10:00:00-00:00", "links": []any{}})
	}
	return out
}

func (c *Cloud) listExtensions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"extensions": c.extensions()})
}

func (c *Cloud) getExtension(w http.ResponseWriter, r *http.Request) {
	alias := r.PathValue("alias")
	for _, e := range c.extensions() {
		if e["alias"] == alias {
			writeJSON(w, http.StatusOK, map[string]any{"extension": e})
			return
		}
	}
	writeErr(w, http.StatusNotFound, fmt.Sprintf("Extension with alias %s does not exist", alias))
}
