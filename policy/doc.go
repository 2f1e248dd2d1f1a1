// Package policy turns the fleet's history into permission policy: from the audit's
// past approvals it suggests the narrowest permission rules (permission's syntax, as
// a rule supervisor's rules_file holds them) that would have allowed what people and
// supervisors approved, with how many requests each covers and how often they agreed,
// and never one that allows anything a person denied.
//
//	history := policy.FromAudit(records)
//	suggestions, refused := policy.Suggest(history, policy.Options{MinSupport: 3, MinAgreement: 0.9})
package policy
