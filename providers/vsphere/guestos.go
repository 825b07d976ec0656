package vsphere

// The OS part of node.kubernetes.io/instance-type. The upstream vSphere CCM names a VM's OS by
// a fixed table of vSphere guest IDs (the VM's config.guestId) and writes "unknown" for any
// guest ID not in it; the names below are the same, so labels and node selectors stay the
// same when a cluster moves from the upstream CCM to this one. Short names are grouped with
// the guest IDs that map to them; testdata/upstream-guest-os.txt lists every pair.
var guestOSNames = []struct {
	name string
	ids  []string
}{
	{"asianux3", []string{"asianux3Guest", "asianux3_64Guest"}},
	{"asianux4", []string{"asianux4Guest", "asianux4_64Guest"}},
	{"asianux5", []string{"asianux5_64Guest"}},
	{"asianux7", []string{"asianux7_64Guest"}},
	{"centos", []string{"centosGuest"}},
	{"centos6", []string{"centos6Guest", "centos6_64Guest"}},
	{"centos64", []string{"centos64Guest"}},
	{"centos7", []string{"centos7Guest", "centos7_64Guest"}},
	{"coreos", []string{"coreos64Guest"}},
	{"darwin", []string{"darwin10Guest", "darwin10_64Guest", "darwin11Guest", "darwin11_64Guest", "darwin12_64Guest", "darwin13_64Guest", "darwin14_64Guest", "darwin15_64Guest", "darwin16_64Guest", "darwin64Guest", "darwinGuest"}},
	{"debian10", []string{"debian10Guest", "debian10_64Guest"}},
	{"debian4", []string{"debian4Guest", "debian4_64Guest"}},
	{"debian5", []string{"debian5Guest", "debian5_64Guest"}},
	{"debian6", []string{"debian6Guest", "debian6_64Guest"}},
	{"debian7", []string{"debian7Guest", "debian7_64Guest"}},
	{"debian8", []string{"debian8Guest", "debian8_64Guest"}},
	{"debian9", []string{"debian9Guest", "debian9_64Guest"}},
	{"dos", []string{"dosGuest"}},
	{"eComStation", []string{"eComStationGuest"}},
	{"eComStation2", []string{"eComStation2Guest"}},
	{"fedora", []string{"fedora64Guest", "fedoraGuest"}},
	{"freebsd", []string{"freebsd64Guest", "freebsdGuest"}},
	{"linux", []string{"genericLinuxGuest", "other24xLinux64Guest", "other24xLinuxGuest", "other26xLinux64Guest", "other26xLinuxGuest", "other3xLinux64Guest", "other3xLinuxGuest", "otherLinux64Guest", "otherLinuxGuest"}},
	{"mandrake", []string{"mandrakeGuest"}},
	{"mandriva", []string{"mandriva64Guest", "mandrivaGuest"}},
	{"netware4", []string{"netware4Guest"}},
	{"netware5", []string{"netware5Guest"}},
	{"netware6", []string{"netware6Guest"}},
	{"nld9", []string{"nld9Guest"}},
	{"oes", []string{"oesGuest"}},
	{"openServer5", []string{"openServer5Guest"}},
	{"openServer6", []string{"openServer6Guest"}},
	{"opensuse", []string{"opensuse64Guest", "opensuseGuest"}},
	{"oracleLinux", []string{"oracleLinux64Guest", "oracleLinuxGuest"}},
	{"oracleLinux6", []string{"oracleLinux6Guest", "oracleLinux6_64Guest"}},
	{"oracleLinux7", []string{"oracleLinux7Guest", "oracleLinux7_64Guest"}},
	{"os2", []string{"os2Guest"}},
	{"other", []string{"otherGuest", "otherGuest64"}},
	{"photon", []string{"vmwarePhoton64Guest"}},
	{"rhel", []string{"redhatGuest"}},
	{"rhel2", []string{"rhel2Guest"}},
	{"rhel3", []string{"rhel3Guest", "rhel3_64Guest"}},
	{"rhel4", []string{"rhel4Guest", "rhel4_64Guest"}},
	{"rhel5", []string{"rhel5Guest", "rhel5_64Guest"}},
	{"rhel6", []string{"rhel6Guest", "rhel6_64Guest"}},
	{"rhel7", []string{"rhel7Guest", "rhel7_64Guest"}},
	{"sjds", []string{"sjdsGuest"}},
	{"sles", []string{"slesGuest"}},
	{"sles10", []string{"sles10Guest", "sles10_64Guest"}},
	{"sles11", []string{"sles11Guest", "sles11_64Guest"}},
	{"sles12", []string{"sles12Guest", "sles12_64Guest"}},
	{"sles64", []string{"sles64Guest"}},
	{"solaris10", []string{"solaris10Guest", "solaris10_64Guest"}},
	{"solaris11", []string{"solaris11_64Guest"}},
	{"solaris6", []string{"solaris6Guest"}},
	{"solaris7", []string{"solaris7Guest"}},
	{"solaris8", []string{"solaris8Guest"}},
	{"solaris9", []string{"solaris9Guest"}},
	{"suse", []string{"suse64Guest", "suseGuest"}},
	{"turbolinux", []string{"turboLinux64Guest", "turboLinuxGuest"}},
	{"ubuntu", []string{"ubuntu64Guest", "ubuntuGuest"}},
	{"unixware7", []string{"unixWare7Guest"}},
	{"vmkernel", []string{"vmkernelGuest"}},
	{"vmkernel5", []string{"vmkernel5Guest"}},
	{"vmkernel6", []string{"vmkernel6Guest"}},
	{"vmkernel65", []string{"vmkernel65Guest"}},
	{"win10", []string{"windows9Guest", "windows9_64Guest"}},
	{"win10server", []string{"windows9Server64Guest"}},
	{"win2000advserv", []string{"win2000AdvServGuest"}},
	{"win2000pro", []string{"win2000ProGuest"}},
	{"win2000serv", []string{"win2000ServGuest"}},
	{"win31", []string{"win31Guest"}},
	{"win7", []string{"windows7Guest", "windows7_64Guest"}},
	{"win7server", []string{"windows7Server64Guest"}},
	{"win8", []string{"windows8Guest", "windows8_64Guest"}},
	{"win8server", []string{"windows8Server64Guest"}},
	{"win95", []string{"win95Guest"}},
	{"win98", []string{"win98Guest"}},
	{"windowshyperv", []string{"windowsHyperVGuest"}},
	{"winlonghorn", []string{"winLonghorn64Guest", "winLonghornGuest"}},
	{"winme", []string{"winMeGuest"}},
	{"winnetbusiness", []string{"winNetBusinessGuest"}},
	{"winnetdatacenter", []string{"winNetDatacenter64Guest", "winNetDatacenterGuest"}},
	{"winnetenterprise", []string{"winNetEnterprise64Guest", "winNetEnterpriseGuest"}},
	{"winnetstandard", []string{"winNetStandard64Guest", "winNetStandardGuest"}},
	{"winnetweb", []string{"winNetWebGuest"}},
	{"winnt", []string{"winNTGuest"}},
	{"winvista", []string{"winVista64Guest", "winVistaGuest"}},
	{"winxphome", []string{"winXPHomeGuest"}},
	{"winxppro", []string{"winXPPro64Guest", "winXPProGuest"}},
}

// guestOS maps a guest ID to its short name, built once from guestOSNames.
var guestOS = func() map[string]string {
	m := map[string]string{}
	for _, g := range guestOSNames {
		for _, id := range g.ids {
			m[id] = g.name
		}
	}
	return m
}()

// guestOSName is the OS part of the instance type: the short name of a known guest ID, else
// "unknown" (as upstream; a raw guest ID is never used, so the label does not change when
// vSphere adds guest IDs).
func guestOSName(guestID string) string {
	if n, ok := guestOS[guestID]; ok {
		return n
	}
	return "unknown"
}
