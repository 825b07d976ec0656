package fakeaws

import (
	"fmt"
	"slices"
	"sort"
)

// RouteTable is a VPC route table of the fake.
type RouteTable struct {
	ID, VPC string
	Routes  []Route
}

// Route is one entry: to an instance, or to a gateway ("local", "igw-…").
type Route struct{ CIDR, Instance, Gateway string }

// MainRouteTable is the ID of the route table New creates, tagged with the cluster.
const MainRouteTable = "rtb-main"

// AddRouteTable adds a route table with tags.
func (s *Server) AddRouteTable(id string, tags map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables[id] = &RouteTable{ID: id, VPC: VPC, Routes: []Route{{CIDR: "10.0.0.0/16", Gateway: "local"}}}
	s.tags[id] = copyTags(tags)
}

// RouteTable returns a copy of a route table.
func (s *Server) RouteTable(id string) (RouteTable, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[id]
	if !ok {
		return RouteTable{}, false
	}
	c := *t
	c.Routes = slices.Clone(t.Routes)
	return c, true
}

// AddRoute adds a route as an operator or another tool would, outside the API (no write is
// counted); a route already there for cidr is replaced, as EC2 holds one per destination.
// Exactly one of instance and gateway is set.
func (s *Server) AddRoute(table, cidr, instance, gateway string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[table]
	if !ok {
		return fmt.Errorf("no route table %s", table)
	}
	t.Routes = slices.DeleteFunc(t.Routes, func(r Route) bool { return r.CIDR == cidr })
	t.Routes = append(t.Routes, Route{CIDR: cidr, Instance: instance, Gateway: gateway})
	return nil
}

// RemoveRoute removes the route to cidr outside the API (as an operator at the console); it
// reports whether there was one.
func (s *Server) RemoveRoute(table, cidr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[table]
	if !ok {
		return false
	}
	n := len(t.Routes)
	t.Routes = slices.DeleteFunc(t.Routes, func(r Route) bool { return r.CIDR == cidr })
	return len(t.Routes) < n
}

// SourceDestCheck reports an instance's source/destination check.
func (s *Server) SourceDestCheck(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.instances[id] != nil && s.instances[id].SourceDestCheck
}

func (s *Server) routeOps(action string, f form) (string, *apiError, bool) {
	switch action {
	case "DescribeRouteTables":
		ids := f.list("RouteTableId")
		filters := f.filters()
		if bad := unknownFilter(filters, "vpc-id", "route-table-id"); bad != "" {
			return "", invalid("The filter '%s' is invalid", bad), true
		}
		for _, id := range ids {
			if _, ok := s.tables[id]; !ok || !s.homeRegion() {
				return "", notFound("InvalidRouteTableID.NotFound", "The routeTable ID '%s' does not exist", id), true
			}
		}
		var found []*RouteTable
		for _, t := range s.tables {
			if !s.homeRegion() || (len(ids) > 0 && !slices.Contains(ids, t.ID)) {
				continue
			}
			if match(filters, func(name string) []string {
				if v, isTag := tagAttr(s.tags[t.ID], name); isTag {
					return v
				}
				return map[string][]string{"vpc-id": {t.VPC}, "route-table-id": {t.ID}}[name]
			}) {
				found = append(found, t)
			}
		}
		sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
		found, next, aerr := ec2Page(f, found, 100, false, s.pageLimit)
		if aerr != nil {
			return "", aerr, true
		}
		var x w
		x.open("routeTableSet")
		for _, t := range found {
			x.open("item")
			x.leaf("routeTableId", t.ID)
			x.leaf("vpcId", t.VPC)
			x.open("routeSet")
			for _, r := range t.Routes {
				x.open("item")
				x.leaf("destinationCidrBlock", r.CIDR)
				state := "active"
				if r.Instance != "" {
					x.leaf("instanceId", r.Instance)
					if in, ok := s.instances[r.Instance]; !ok || in.State == "terminated" {
						state = "blackhole"
					}
				} else {
					x.leaf("gatewayId", r.Gateway)
				}
				x.leaf("state", state)
				x.close("item")
			}
			x.close("routeSet")
			writeTags(&x, s.tags[t.ID])
			x.close("item")
		}
		x.close("routeTableSet")
		writeNextToken(&x, next)
		return x.b.String(), nil, true
	case "CreateRoute", "DeleteRoute":
		t, ok := s.tables[f.get("RouteTableId")]
		if !ok {
			return "", notFound("InvalidRouteTableID.NotFound", "The routeTable ID '%s' does not exist", f.get("RouteTableId")), true
		}
		cidr := f.get("DestinationCidrBlock")
		i := slices.IndexFunc(t.Routes, func(r Route) bool { return r.CIDR == cidr })
		if action == "DeleteRoute" {
			if i < 0 {
				return "", notFound("InvalidRoute.NotFound", "no route with destination-cidr-block %s in route table %s", cidr, t.ID), true
			}
			t.Routes = slices.Delete(t.Routes, i, i+1)
			return "<return>true</return>", nil, true
		}
		if i >= 0 {
			return "", &apiError{Status: 400, Code: "RouteAlreadyExists", Message: "The route identified by " + cidr + " already exists."}, true
		}
		id := f.get("InstanceId")
		if in, ok := s.instances[id]; !ok || in.State == "terminated" {
			return "", notFound("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id), true
		}
		t.Routes = append(t.Routes, Route{CIDR: cidr, Instance: id})
		return "<return>true</return>", nil, true
	case "ModifyInstanceAttribute":
		in, ok := s.instances[f.get("InstanceId")]
		if !ok {
			return "", notFound("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", f.get("InstanceId")), true
		}
		if v := f.get("SourceDestCheck.Value"); v != "" {
			in.SourceDestCheck = v == "true"
		}
		return "<return>true</return>", nil, true
	}
	return "", nil, false
}
