package fakeaws

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The instance metadata service of one instance, IMDSv2 only (as instances launched with
// HttpTokens=required): PUT /latest/api/token gives a token for the TTL asked, and every GET
// without a valid token is 401. It answers from the fake's state, so the instance's zone and
// state are the EC2 API's.

// StartMetadata serves the metadata of instance id on a new loopback port and returns its
// endpoint (what AWS_EC2_METADATA_SERVICE_ENDPOINT or a [ServiceOverride] ec2imds names).
func (s *Server) StartMetadata(id string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { s.serveMetadata(rw, r, id) }),
		ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.regional = append(s.regional, srv) // closed with the fake
	s.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), nil
}

// MetadataCalls counts the metadata requests by "PUT /latest/api/token", "GET <path>", and
// "401" for GETs refused for want of a valid token.
func (s *Server) MetadataCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.mdCalls {
		out[k] = v
	}
	return out
}

func (s *Server) serveMetadata(rw http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mdCalls == nil {
		s.mdCalls, s.mdTokens = map[string]int{}, map[string]time.Time{}
	}
	if r.URL.Path == "/latest/api/token" {
		s.mdCalls["PUT /latest/api/token"]++
		ttl, err := strconv.Atoi(r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds"))
		if r.Method != http.MethodPut || err != nil || ttl < 1 || ttl > 21600 {
			http.Error(rw, "bad token request", http.StatusBadRequest)
			return
		}
		tok := randomHex(16)
		s.mdTokens[tok] = time.Now().Add(time.Duration(ttl) * time.Second)
		rw.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", strconv.Itoa(ttl))
		_, _ = rw.Write([]byte(tok))
		return
	}
	if exp, ok := s.mdTokens[r.Header.Get("X-Aws-Ec2-Metadata-Token")]; !ok || time.Now().After(exp) {
		s.mdCalls["401"]++
		http.Error(rw, "", http.StatusUnauthorized)
		return
	}
	s.mdCalls["GET "+r.URL.Path]++
	in := s.instances[id]
	if in == nil || r.Method != http.MethodGet {
		http.NotFound(rw, r)
		return
	}
	region := zoneRegion(in.Zone, s.region)
	ip := ""
	if len(in.ENIs) > 0 && len(in.ENIs[0].PrivateIPs) > 0 {
		ip = in.ENIs[0].PrivateIPs[0]
	}
	items := map[string]string{
		"instance-id":                 in.ID,
		"instance-type":               in.Type,
		"placement/availability-zone": in.Zone,
		"placement/region":            region,
		"local-hostname":              in.PrivateDNS,
		"hostname":                    in.PrivateDNS,
		"local-ipv4":                  ip,
	}
	if r.URL.Path == "/latest/dynamic/instance-identity/document" {
		_ = json.NewEncoder(rw).Encode(map[string]string{
			"accountId": Account, "architecture": "x86_64", "availabilityZone": in.Zone, "region": region,
			"instanceId": in.ID, "instanceType": in.Type, "privateIp": ip, "version": "2017-09-30",
		})
		return
	}
	v, ok := items[strings.TrimPrefix(r.URL.Path, "/latest/meta-data/")]
	if !ok || v == "" {
		http.NotFound(rw, r)
		return
	}
	fmt.Fprint(rw, v)
}

// zoneRE is the region at the start of a zone name: us-east-1a, us-west-2-lax-1a (Local Zone)
// and us-east-1-wl1-bos-wlz-1 (Wavelength Zone) all start with their region.
var zoneRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+`)

// zoneRegion is the region of zone, or home for an instance without a zone.
func zoneRegion(zone, home string) string {
	if r := zoneRE.FindString(zone); r != "" {
		return r
	}
	return home
}
