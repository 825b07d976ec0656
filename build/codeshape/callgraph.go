package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"

	"golang.org/x/tools/go/packages"
)

// function is a function or method declared, with a body, in the package's non-test files.
type function struct {
	name    string      // as funcName prints it
	file    string      // base name of the file that declares it
	callees []*function // one per call site in the body (function literals included), in source order
}

// How a call x.m(...) is resolved to the package's method m.
const (
	// resolveTypes follows the type checker: x.m is followed when it denotes a concrete
	// method of the package (through pointers, embedding and type arguments included).
	resolveTypes = "types"
	// resolveNames takes m to be the package's method named m when exactly one method of the
	// package has that name, whatever x is (an imported package excepted): it misses x.get()
	// when several types have a get, and follows err.Error() into the package's one Error
	// method. It reaches the files the figures on following a Service through the AWS
	// provider count (README.md).
	resolveNames = "names"
)

// loadPackage type-checks the package in dir, without its _test.go files, with the go command's
// view of dir (its module, and go.work unless GOWORK=off).
func loadPackage(dir string) (*packages.Package, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
			packages.NeedTypes | packages.NeedTypesInfo,
		Dir: dir,
	}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		return nil, err
	}
	if len(pkgs) != 1 {
		return nil, fmt.Errorf("%s holds %d packages, want 1", dir, len(pkgs))
	}
	// A package that does not type-check would give a call graph with holes in it.
	var errs []error
	for _, e := range pkgs[0].Errors {
		errs = append(errs, e)
	}
	return pkgs[0], errors.Join(errs...)
}

// callGraph gives the package's functions by name, each with its calls to the others. A call
// is followed only when its callee is known without running the code: calls through
// interface values, through function values and through method values stored or passed
// around are not followed. A function literal belongs to the function it is written in.
func callGraph(pkg *packages.Package, resolve string) map[string]*function {
	byObj := map[*types.Func]*function{}
	byName := map[string]*function{}
	methods := map[string][]*types.Func{}
	bodies := map[*types.Func]*ast.BlockStmt{}
	for _, file := range pkg.Syntax {
		base := filepath.Base(pkg.Fset.File(file.Pos()).Name())
		for _, decl := range file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			obj := pkg.TypesInfo.Defs[fd.Name].(*types.Func)
			fn := &function{name: funcName(fd), file: base}
			byObj[obj], bodies[obj] = fn, fd.Body
			byName[fn.name] = fn
			if fd.Recv != nil {
				methods[obj.Name()] = append(methods[obj.Name()], obj)
			}
		}
	}
	r := resolver{info: pkg.TypesInfo, byObj: byObj, methods: methods, byName: resolve == resolveNames}
	for obj, body := range bodies {
		byObj[obj].callees = r.callees(body)
	}
	return byName
}

type resolver struct {
	info    *types.Info
	byObj   map[*types.Func]*function
	methods map[string][]*types.Func // the package's methods by method name
	byName  bool                     // resolveNames
}

// callees lists the calls in body to the package's functions, ordered by where the callee's
// name stands: in f(g(x)) f comes first, in x.a().b() a does.
func (r resolver) callees(body *ast.BlockStmt) []*function {
	type site struct {
		pos token.Pos
		fn  *function
	}
	var sites []site
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		name, x := calleeName(call.Fun)
		if name == nil {
			return true
		}
		if fn := r.resolve(name, x); fn != nil {
			sites = append(sites, site{name.Pos(), fn})
		}
		return true
	})
	sort.SliceStable(sites, func(i, j int) bool { return sites[i].pos < sites[j].pos })
	fns := make([]*function, len(sites))
	for i, s := range sites {
		fns[i] = s.fn
	}
	return fns
}

// calleeName finds the name a call calls: f in f(...) and f[T](...), m and x in x.m(...).
func calleeName(fun ast.Expr) (name *ast.Ident, x ast.Expr) {
	fun = ast.Unparen(fun)
	switch e := fun.(type) {
	case *ast.IndexExpr:
		fun = ast.Unparen(e.X)
	case *ast.IndexListExpr:
		fun = ast.Unparen(e.X)
	}
	switch e := fun.(type) {
	case *ast.Ident:
		return e, nil
	case *ast.SelectorExpr:
		return e.Sel, e.X
	}
	return nil, nil
}

func (r resolver) resolve(name *ast.Ident, x ast.Expr) *function {
	if x != nil && r.byName && !r.isPackage(x) {
		if ms := r.methods[name.Name]; len(ms) == 1 {
			return r.byObj[ms[0]]
		}
		return nil
	}
	obj, ok := r.info.Uses[name].(*types.Func)
	if !ok {
		return nil // a conversion, a builtin, or a variable holding a function
	}
	// An interface's method has no body here; byObj does not hold it, nor another package's
	// function. Origin maps a generic function's instance to its declaration.
	return r.byObj[obj.Origin()]
}

// isPackage says whether x names an imported package, as in strings.Join.
func (r resolver) isPackage(x ast.Expr) bool {
	id, ok := x.(*ast.Ident)
	if !ok {
		return false
	}
	_, ok = r.info.Uses[id].(*types.PkgName)
	return ok
}
