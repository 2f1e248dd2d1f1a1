// Package htmlpage builds the few pages agentmux renders on the server (the console's
// sign-in, an action link's confirmation): data goes in only escaped, and each
// character that hides or reorders what a person reads is shown as a mark.
//
//	var p htmlpage.Page
//	p.Start("Sign in · agentmux", "login", ` action="/login"`)
//	p.Para("error", "alert", problem)
//	p.Send(w, http.StatusOK)
package htmlpage
