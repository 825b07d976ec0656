package image

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// SBOM is an SPDX 2.3 document (JSON) listing what a ccm binary was built from: the Go
// toolchain, ccm's own module and every module linked in, with the versions and go.sum hashes
// the binary records about itself. Reading the binary, not go.mod, lists exactly what shipped.
type SBOM struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      SBOMCreation   `json:"creationInfo"`
	Packages          []SBOMPackage  `json:"packages"`
	Relationships     []SBOMRelation `json:"relationships"`
	DescribesPackages []string       `json:"documentDescribes"`
}

// SBOMCreation is SPDX's creationInfo.
type SBOMCreation struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

// SBOMPackage is one SPDX package: a Go module (or the toolchain).
type SBOMPackage struct {
	SPDXID           string       `json:"SPDXID"`
	Name             string       `json:"name"`
	VersionInfo      string       `json:"versionInfo"`
	DownloadLocation string       `json:"downloadLocation"`
	FilesAnalyzed    bool         `json:"filesAnalyzed"`
	ExternalRefs     []SBOMExtRef `json:"externalRefs,omitempty"`
	Comment          string       `json:"comment,omitempty"`
}

// SBOMExtRef is an SPDX external reference (a package URL).
type SBOMExtRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

// SBOMRelation is an SPDX relationship.
type SBOMRelation struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

var spdxIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// SBOMOf reads the build information of the Go binary at path and describes it as document
// name (for example ccm-dummy-v0.2.0), created at the given time (the release's, so the same
// commit gives the same document).
func SBOMOf(path, name, version string, created time.Time) (*SBOM, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", path, err)
	}
	main := SBOMPackage{SPDXID: "SPDXRef-Package-" + spdxIDUnsafe.ReplaceAllString(name, "-"), Name: info.Main.Path,
		VersionInfo: version, DownloadLocation: "NOASSERTION", ExternalRefs: []SBOMExtRef{purl(info.Main.Path, version)}}
	doc := &SBOM{SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT", Name: name,
		DocumentNamespace: "https://" + info.Main.Path + "/sbom/" + name,
		CreationInfo:      SBOMCreation{Created: created.UTC().Format(time.RFC3339), Creators: []string{"Tool: ccm-release"}},
		Packages:          []SBOMPackage{main}, DescribesPackages: []string{main.SPDXID}}
	goID := "SPDXRef-Package-go-" + spdxIDUnsafe.ReplaceAllString(info.GoVersion, "-")
	doc.Packages = append(doc.Packages, SBOMPackage{SPDXID: goID, Name: "go", VersionInfo: strings.TrimPrefix(info.GoVersion, "go"),
		DownloadLocation: "https://go.dev/dl/", ExternalRefs: []SBOMExtRef{{Category: "PACKAGE-MANAGER", Type: "purl",
			Locator: "pkg:golang/stdlib@" + info.GoVersion}}})
	doc.Relationships = append(doc.Relationships, SBOMRelation{main.SPDXID, "DEPENDS_ON", goID})
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		p := SBOMPackage{SPDXID: "SPDXRef-Package-" + spdxIDUnsafe.ReplaceAllString(d.Path+"-"+d.Version, "-"),
			Name: d.Path, VersionInfo: d.Version, DownloadLocation: "https://proxy.golang.org/" + d.Path + "/@v/" + d.Version + ".zip",
			ExternalRefs: []SBOMExtRef{purl(d.Path, d.Version)}}
		if d.Sum != "" {
			// go.sum's hash is over the module's files, not over one download, so it is no SPDX
			// checksum; it is what `go mod verify` compares, and is kept for that.
			p.Comment = "go.sum " + d.Sum
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, SBOMRelation{main.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	slices.SortStableFunc(doc.Packages[2:], func(a, b SBOMPackage) int { return strings.Compare(a.Name, b.Name) })
	return doc, nil
}

func purl(path, version string) SBOMExtRef {
	return SBOMExtRef{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:golang/" + path + "@" + version}
}

// JSON is the document, indented, with a final newline.
func (s *SBOM) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	return append(b, '\n'), err
}
