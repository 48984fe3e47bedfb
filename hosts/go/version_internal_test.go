package sinkcoord

import "testing"

func TestCompatibleVersions(t *testing.T) {
	for _, v := range []string{"0.2.1", "0.2.3", "0.2.4", "0.2.17"} {
		if !compatible(v) {
			t.Errorf("%s refused", v)
		}
	}
	for _, v := range []string{"0.1.0", "0.2.0", "0.3.0", "1.0.0", "0.2.1-rc.1", "v0.2.3", "0.2", "0.02.3", "0.2.+3"} {
		if compatible(v) {
			t.Errorf("%s accepted", v)
		}
	}
	_, err := checkVersion([]string{"sink:coordinator/coordinator@0.2.3#x", "sink:coordinator/table@0.2.4#y", "memory"})
	if err == nil || err.Error() != "incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0, the component exports several versions (0.2.3, 0.2.4)" {
		t.Error(err)
	}
	_, err = checkVersion([]string{"memory"})
	if err == nil || err.Error() != "not a sink-coordinator component: it exports no sink:coordinator interface (this host runs sink:coordinator >=0.2.1, <0.3.0)" {
		t.Error(err)
	}
}
