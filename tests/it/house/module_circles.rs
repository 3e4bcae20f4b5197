//! Inside each crate, the files' own graph: a file that names another module (`crate::a::b`,
//! `super::x`, `self::y`) depends on the file that holds it, except on its own children (a
//! parent declaring, re-exporting or mounting its children is structure). A circle of more than
//! three files means no reader can tell which of them is the ground, so none is allowed
//! ([`MAX_CIRCLE`]); `cargo test --test it module_circles -- --nocapture` prints each crate's
//! largest.
//!
//! Approximations, all on the safe side of readability: a path resolves to the deepest module
//! file it names; tests (`#[cfg(test)] mod ...` to the end of a file, `tests.rs`, `*_tests.rs`)
//! and `//` comments are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most files one circle may hold.
const MAX_CIRCLE: usize = 3;

type Module = Vec<String>;

/// Every module file of the crate at `src`, by module path.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if name != "bin" && name != "tests" {
                    stack.push(path);
                }
                continue;
            }
            let Some(stem) = name.strip_suffix(".rs") else { continue };
            if stem == "tests" || stem.ends_with("_tests") {
                continue;
            }
            let mut m: Module =
                path.parent().unwrap().strip_prefix(src).unwrap().iter().map(|s| s.to_string_lossy().into()).collect();
            if !matches!(stem, "mod" | "lib" | "main") {
                m.push(stem.to_string());
            } else if stem != "mod" && !m.is_empty() {
                continue; // a binary's main.rs below src/bin
            }
            out.insert(m, path);
        }
    }
    out
}

/// The source without `//` comments and without a trailing test module.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" && lines.peek().is_some_and(|l| l.trim_start().starts_with("mod ")) {
            break;
        }
        out.push_str(line.split("//").next().unwrap_or_default());
        out.push('\n');
    }
    out
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The modules file `m`'s code names.
fn references(m: &Module, code: &str, all: &BTreeMap<Module, PathBuf>) -> BTreeSet<Module> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        if !code.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let Some(word) = ident_at(&code[i..]).filter(|_| i == 0 || !is_ident(bytes[i - 1])) else {
            i += 1;
            continue;
        };
        let after = &code[i + word.len()..];
        let preceded_by_path = code[..i].ends_with("::");
        if after.starts_with("::") && !preceded_by_path {
            let base: Option<Module> = match word {
                "crate" => Some(vec![]),
                "self" => Some(m.clone()),
                "super" => Some(m[..m.len().saturating_sub(1)].to_vec()),
                w => {
                    let child: Module = m.iter().cloned().chain([w.to_string()]).collect();
                    all.contains_key(&child).then_some(child)
                }
            };
            if let Some(base) = base {
                for tail in tails(&after[2..]) {
                    out.insert(resolve(base.clone(), &tail, all));
                }
            }
        }
        i += word.len();
    }
    // A module naming its own children (declaring, re-exporting, mounting them) is structure,
    // not a circle: only the other way round counts.
    out.retain(|o| !o.starts_with(m));
    out
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The paths after a `prefix::`: one, or each of a `{a::b, c}` group's.
fn tails(s: &str) -> Vec<Vec<String>> {
    if let Some(group) = s.strip_prefix('{') {
        let end = group.find('}').unwrap_or(group.len());
        return group[..end].split(',').map(|p| path_of(p.trim())).collect();
    }
    vec![path_of(s)]
}

fn path_of(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(id) = ident_at(rest) {
        out.push(id.to_string());
        match rest[id.len()..].strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    out
}

/// The deepest module file `base` followed by `tail` names (`super` steps up).
fn resolve(mut base: Module, tail: &[String], all: &BTreeMap<Module, PathBuf>) -> Module {
    for seg in tail {
        if seg == "super" {
            base.pop();
            continue;
        }
        let next: Module = base.iter().cloned().chain([seg.clone()]).collect();
        if !all.contains_key(&next) {
            break;
        }
        base = next;
    }
    base
}

/// The largest strongly connected component (Tarjan's algorithm, iteratively deep enough for
/// a crate's files).
fn largest_circle(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Module> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        best: Vec<Module>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let Some((w, _)) = s.edges.get_key_value(w) else { continue };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > s.best.len() {
                s.best = comp;
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        best: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.best
}

/// Each crate's file graph.
fn crate_graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let all = modules(src);
    all.iter()
        .map(|(m, path)| (m.clone(), references(m, &code(&std::fs::read_to_string(path).unwrap()), &all)))
        .collect()
}

#[test]
fn no_crate_has_a_circle_of_more_than_three_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut srcs = vec![root.join("src"), root.join("bootos/agent/src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        srcs.push(entry.unwrap().path().join("src"));
    }
    let mut over = Vec::new();
    for src in srcs {
        let circle = largest_circle(&crate_graph(&src));
        let names: Vec<String> =
            circle.iter().map(|m| if m.is_empty() { "lib".into() } else { m.join("::") }).collect();
        println!("{}: largest circle {} {names:?}", src.display(), circle.len());
        if circle.len() > MAX_CIRCLE {
            over.push(format!("{}: {names:?}", src.display()));
        }
    }
    assert!(over.is_empty(), "circles of more than {MAX_CIRCLE} files: {over:#?}");
}

#[test]
fn the_graph_sees_each_way_of_naming_a_module() {
    let all: BTreeMap<Module, PathBuf> = [vec![], vec!["a".into()], vec!["a".into(), "b".into()], vec!["c".into()]]
        .into_iter()
        .map(|m| (m, PathBuf::new()))
        .collect();
    let a: Module = vec!["a".into()];
    let ab: Module = vec!["a".into(), "b".into()];
    let refs = |m: &Module, text: &str| references(m, &code(text), &all);
    assert_eq!(refs(&ab, "use super::super::c::X;"), [vec!["c".to_string()]].into());
    assert_eq!(refs(&ab, "use crate::{a::f, c::G};"), [a.clone(), vec!["c".to_string()]].into());
    assert_eq!(refs(&a, "pub use b::Thing; self::b::f();"), BTreeSet::new(), "its own child: structure");
    assert_eq!(refs(&ab, "use super::Shared;"), [a.clone()].into(), "its parent: a dependency");
    assert_eq!(refs(&vec!["c".to_string()], "é crate::a::b::f()"), [ab.clone()].into(), "past a non-ASCII char");
    assert_eq!(refs(&a, "x::b::y(); // crate::c::z"), BTreeSet::new(), "neither a path's middle nor a comment");
    assert_eq!(refs(&ab, "fn f() {}\n#[cfg(test)]\nmod tests { use crate::c::T; }"), BTreeSet::new(), "nor tests");
    let edges: BTreeMap<Module, BTreeSet<Module>> =
        [(a.clone(), [ab.clone()].into()), (ab.clone(), [a.clone()].into()), (vec![], [a.clone()].into())].into();
    assert_eq!(largest_circle(&edges).len(), 2);
}
