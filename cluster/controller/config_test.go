package controller

import (
	"strings"
	"testing"
)

func TestConfigValidation(t *testing.T) {
	voters := []Voter{{ID: 1, RaftAddr: "127.0.0.1:0"}, {ID: 2, RaftAddr: "127.0.0.1:0"}}
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{NodeID: 1, Voters: voters}, "DataDir"},
		{Config{NodeID: 3, Voters: voters, DataDir: "x"}, "not in the voter set"},
		{Config{NodeID: 1, Voters: append(voters, voters[0]), DataDir: "x"}, "twice"},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("New(%+v) = %v, want error containing %q", c.cfg, err, c.want)
		}
	}
}
