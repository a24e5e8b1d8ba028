package main

import (
	"runtime/debug"
	"strings"
)

// versionLine is what -version prints: "toolguard-proxy VERSION REVISION",
// the module version from bi ("devel" for a build of a working tree,
// which Go reports as "(devel)") and the VCS revision it was built from
// ("unknown" when the build recorded none, as with -buildvcs=false or a
// build outside a repository), with "-dirty" when the tree had changes.
// A nil bi (debug.ReadBuildInfo found none) gives "devel unknown".
func versionLine(bi *debug.BuildInfo) string {
	version, revision, dirty := "devel", "unknown", false
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if s.Value != "" {
					revision = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		revision += "-dirty"
	}
	return strings.Join([]string{"toolguard-proxy", version, revision}, " ")
}

// buildVersion is versionLine of the running binary.
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionLine(bi)
}
