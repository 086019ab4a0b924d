package sysinfo

import (
	"runtime/debug"
	"testing"
)

// TestBuild: a version and commit set at link time win; otherwise the
// module version that go install records, and the revision a build in a
// checkout records or a pseudo-version carries.
func TestBuild(t *testing.T) {
	rev := func(r, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: r}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name                 string
		version, commit      string
		bi                   *debug.BuildInfo
		wantVersion, wantCom string
	}{
		{"no build info (a test binary may have none)", "dev", "", nil, "dev", ""},
		{"release build: both set with -X", "v1.2.3", "abc123", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev("fff", "true")}, "v1.2.3", "abc123"},
		{"release build wins over what go install recorded", "v1.2.3", "abc123", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, "v1.2.3", "abc123"},
		{"go build in a clean checkout", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev("0123abcd", "false")}, "dev", "0123abcd"},
		{"go build in a checkout with changes", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev("0123abcd", "true")}, "dev", "0123abcd+dirty"},
		{"go build -buildvcs=false", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", ""},
		{"go install …@v1.4.0: the tag names the commit", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0", ""},
		{"go install …@COMMIT: a pseudo-version", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203075500-0123456789ab"}}, "v0.0.0-20261203075500-0123456789ab", "0123456789ab"},
		{"go install …@COMMIT after a tag", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.1-0.20261203075500-0123456789ab"}}, "v1.4.1-0.20261203075500-0123456789ab", "0123456789ab"},
		{"only the commit set with -X", "dev", "abc123", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0", "abc123"},
	} {
		v, com := build(c.version, c.commit, c.bi)
		if v != c.wantVersion || com != c.wantCom {
			t.Errorf("%s: version %q, commit %q; want %q, %q", c.name, v, com, c.wantVersion, c.wantCom)
		}
	}
}
