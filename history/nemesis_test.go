package history

import "testing"

// The vocabulary is closed: every kind is named once, ends with a verb the
// readers recognise as an end, and is not itself read as one; the classes
// the theory relies on hold for the kinds the seeds name.
func TestNemesisVocabulary(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range NemesisKinds {
		if seen[k.Name] {
			t.Errorf("kind %q listed twice", k.Name)
		}
		seen[k.Name] = true
		if IsEndVerb(k.Name) {
			t.Errorf("kind %q reads as the end of a fault", k.Name)
		}
		if end := EndVerb(k.Name); !IsEndVerb(end) {
			t.Errorf("kind %q ends with %q, which readers do not take as an end", k.Name, end)
		}
	}
	for kind, want := range map[string]FaultClass{
		NemesisKill:               TakesLeaderAway | PowerCut,
		NemesisStop:               TakesLeaderAway,
		NemesisPause:              TakesLeaderAway | DelaysRequests,
		NemesisPartition:          TakesLeaderAway | DelaysRequests,
		NemesisSlow:               TakesLeaderAway | DelaysRequests,
		NemesisPowerLoss:          TakesLeaderAway | PowerCut,
		NemesisClientCrash:        ClientFault,
		NemesisConsumerRestart:    ClientFault | GroupFault,
		NemesisConsumerJoin:       ClientFault | GroupFault,
		NemesisStrandLeader:       TakesLeaderAway | DelaysRequests,
		NemesisKIP101:             TakesLeaderAway | DelaysRequests,
		NemesisReassign:           TakesLeaderAway,
		NemesisKillTxnCoordinator: TakesLeaderAway | PowerCut | TxnFault,
		NemesisPauseProducer:      ClientFault | TxnFault | DelaysRequests,
		NemesisClientReset:        LinkFault,
		NemesisLoseResponses:      LinkFault,
		NemesisDelayClient:        LinkFault | DelaysRequests,
		NemesisRestartStorm:       TakesLeaderAway | PowerCut,
		NemesisFaultPoints:        TakesLeaderAway | PowerCut | DelaysRequests,
		NemesisDiskFault:          TakesLeaderAway | PowerCut | StorageFault,
		NemesisClockSkew:          ClockFault,
		NemesisPauseShareConsumer: ClientFault | ShareFault,
	} {
		if got := NemesisClasses(kind); got != want {
			t.Errorf("%s: classes %b, want %b", kind, got, want)
		}
	}
	if len(seen) != 22 || NemesisClasses("explode") != 0 {
		t.Errorf("%d kinds; an unknown kind has classes %b", len(seen), NemesisClasses("explode"))
	}
	if EndVerb(NemesisKill) != VerbStart || EndVerb(NemesisKIP101) != "end-kip101" || !IsEndVerb(VerbHealAll) {
		t.Error("end verbs changed: the history format (DESIGN.md section 4) names them")
	}
	c := Config{Nemeses: []string{NemesisDelayClient, NemesisClientCrash}}
	if c.HasFault(TakesLeaderAway) || !c.HasFault(ClientFault) {
		t.Error("HasFault misreads the nemeses")
	}
}
