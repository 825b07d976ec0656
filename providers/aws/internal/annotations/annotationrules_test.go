package annotations

import (
	"os"
	"strings"
	"testing"
)

// Every rule is complete: how upstream reads the annotation and what it defaults to, and the
// reason it does nothing on the type it is not for (only there).
func TestAnnotationRulesComplete(t *testing.T) {
	for _, r := range annotationRules {
		if r.Upstream == "" || r.Default == "" {
			t.Errorf("%s: Upstream %q, Default %q; want both", r.Name, r.Upstream, r.Default)
		}
		if (r.For == bothTypes) != (r.NotUsed == "") {
			t.Errorf("%s: For %d with NotUsed %q; want a reason exactly when it is for one type", r.Name, r.For, r.NotUsed)
		}
		if _, ok := rulesBySuffix[strings.TrimPrefix(r.Name, Prefix)]; ok == (r.Parse == nil) {
			t.Errorf("%s: an annotation under the prefix needs a Parse, and only those have one", r.Name)
		}
	}
}

// A value each refusing parser refuses; the parsers in neverRefused take any value (they
// compare it with fixed words, or advise). Every rule's parser is in one of the two.
var (
	badValues = map[string]string{
		Subnets: ",", SecurityGroup: "web", ExtraGroups: "sg-1,web", SSLCert: "my-cert",
		EIPAllocations: "203.0.113.9", HCPort: "0", ExtraTags: "kubernetes.io/cluster/other=owned",
		NodeLabels: "role!=spot", HCPath: "healthz", TGAttributes: "preserve_client_ip.enabled=",
		PrivateAddresses: "fd00::1", SSLPolicy: "TLS 1.2", CrossZone: "yes", HCHealthy: "1",
		HCUnhealthy: "11", HCTimeout: "61", HCInterval: "4", HCProtocol: "UDP", ProxyProtocol: "true",
		IdleTimeout: "0", Draining: "on", DrainingTimeout: "3601", AccessLog: "1 ", AccessLogEmit: "30",
	}
	neverRefused = []string{Type, Internal, SSLPorts, Backend, AccessLogBucket, AccessLogPrefix}
)

// Every rule's parser that can refuse a value refuses a bad one with an error naming the
// annotation, both called alone and through Parse, on the load balancer type it is for
// (a classic ELB when both); the others accept even an odd value.
func TestEveryAnnotationParserRefusesNamingIt(t *testing.T) {
	for suffix, r := range rulesBySuffix {
		bad, refuses := badValues[suffix]
		never := false
		for _, s := range neverRefused {
			never = never || s == suffix
		}
		if refuses == never {
			t.Errorf("%s: in badValues %v, in neverRefused %v; want exactly one", r.Name, refuses, never)
			continue
		}
		nlb := r.For == nlbOnly
		if never {
			if err := r.Parse(&Options{NLB: nlb}, suffix, " odd,,* \x00"); err != nil {
				t.Errorf("%s: %v; listed as never refusing", r.Name, err)
			}
			continue
		}
		want := "annotation " + r.Name + ":"
		if err := r.Parse(&Options{NLB: nlb}, suffix, bad); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s=%q: parser says %v; want an error starting %q", r.Name, bad, err, want)
		}
		ann := map[string]string{r.Name: bad}
		if nlb {
			ann[Prefix+Type] = "nlb"
		}
		if _, err := Parse(svcWith(ann)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s=%q: parseOptions says %v; want an error starting %q", r.Name, bad, err, want)
		}
	}
}

// The parity table of docs/providers/aws.md agrees with the rules on which type an annotation
// is for: a row whose Classic ELB or NLB cell starts with "Warning" names only annotations not
// for that type, and an annotation for one type only has "Warning" in the other type's cell.
// (TestParityTableMatchesTheAnnotationTable checks that the table lists exactly the rules.)
func TestParityTableAgreesOnTypes(t *testing.T) {
	const header = "| Annotation | Classic ELB | NLB |"
	data, err := os.ReadFile("../../../../docs/providers/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, "\n"+header)
	if i < 0 {
		t.Fatalf("no parity table headed %q", header)
	}
	lines := strings.Split(doc[i+1:], "\n")
	rows := 0
	for _, row := range lines[2:] {
		if !strings.HasPrefix(row, "|") {
			break
		}
		rows++
		cells := strings.Split(row, "|") // "", names, classic, NLB, values, ""
		names, err := Table.ParityNames(lines[0]+"\n"+lines[1]+"\n"+row, header, Prefix)
		if err != nil || len(cells) < 5 {
			t.Fatalf("row %q: %v", row, err)
		}
		classic, nlb := strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])
		for _, name := range names {
			r, ok := rulesBySuffix[strings.TrimPrefix(name, Prefix)]
			if !ok {
				continue // TestParityTableMatchesTheAnnotationTable reports it
			}
			if strings.HasPrefix(classic, "Warning") != (r.For == nlbOnly) || strings.HasPrefix(nlb, "Warning") && r.For != classicOnly {
				t.Errorf("%s (for %d): the row says classic %q, NLB %q", name, r.For, classic, nlb)
			}
			if r.For == classicOnly && !strings.Contains(nlb, "Warning") {
				t.Errorf("%s is for classic ELBs only; the row's NLB cell %q says no Warning", name, nlb)
			}
		}
	}
	if rows == 0 {
		t.Error("the parity table has no rows")
	}
}
