package policy

import "fmt"

// Bar is what a shadow supervisor's record must show before it is promoted to decide
// the routes it shadows: answers to at least MinDecided requests, agreeing with the
// answers given on at least MinAgreement of them, with no answer on at most
// 1 - MinAgreement of the requests it was asked, and not one approval a person denied.
type Bar struct {
	MinAgreement float64
	MinDecided   int
}

// The bar of `agentmux policy promote` and the console, unless told otherwise.
const (
	DefaultMinAgreement = 0.95
	DefaultMinDecided   = 50
)

// Check says why t falls short of the bar; nil when it clears it.
func (b Bar) Check(t ShadowTally) error {
	answered := t.Agreed + t.Disagreed
	switch {
	case t.PersonDenied > 0:
		return fmt.Errorf("%s would have allowed %d approvals a person denied: agentmux policy shadow lists its disagreements", t.Supervisor, t.PersonDenied)
	case answered < b.MinDecided:
		return fmt.Errorf("%s answered %d requests, under the %d a promotion needs: let it shadow longer, or lower the bar", t.Supervisor, answered, b.MinDecided)
	case t.Agreement < b.MinAgreement:
		return fmt.Errorf("%s agreed on %.1f%% of %d answers, under the %.1f%% a promotion needs: agentmux policy shadow lists its disagreements",
			t.Supervisor, 100*t.Agreement, answered, 100*b.MinAgreement)
	case float64(t.NoAnswer) > (1-b.MinAgreement)*float64(t.Decided):
		return fmt.Errorf("%s gave no answer to %d of the %d requests it shadowed: promoted, those would get their default answer; give it a longer deadline or a fallback first",
			t.Supervisor, t.NoAnswer, t.Decided)
	}
	return nil
}
