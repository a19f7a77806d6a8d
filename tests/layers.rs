//! The crate's top-level modules import only downwards, through the layers docs/layout.md
//! declares: a module may use a module of a lower layer, never one of its own layer or a
//! higher one, so no two modules import each other, directly or round a cycle. Test code is
//! left out (a module's tests may bring higher parts together), as are comments.
//!
//! Counted from the source: every `crate::NAME` path in a file under `src/NAME...` names an
//! import from that file's top-level module to NAME.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LAYOUT: &str = "docs/layout.md";

/// The layers of docs/layout.md's "Layers" list, bottom first: lines `N. what: mod mod ...`.
fn declared_layers(root: &Path) -> BTreeMap<String, usize> {
    let layout = std::fs::read_to_string(root.join(LAYOUT)).unwrap();
    let section = layout
        .split("\n## Layers\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{LAYOUT} has a `## Layers` section"));
    let mut layers = BTreeMap::new();
    for line in section.lines().take_while(|l| !l.starts_with("## ")) {
        let Some((number, rest)) = line.split_once(". ") else {
            continue;
        };
        let Ok(number) = number.trim().parse::<usize>() else {
            continue;
        };
        let modules = rest.split_once(':').map_or(rest, |(_, m)| m);
        for module in modules.split_whitespace() {
            let module = module.trim_matches(|c| c == '`' || c == ',');
            let before = layers.insert(module.to_owned(), number);
            assert!(before.is_none(), "{module} is declared twice in {LAYOUT}");
        }
    }
    layers
}

/// The top-level module a source file belongs to (`None`: the crate root and binary).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

/// The code of `text` without comments and test modules.
fn non_test_code(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let next = lines.peek().map_or("", |l| l.trim());
            if next.starts_with("mod ") || next.starts_with("pub(crate) mod ") {
                // A test module runs to the end of the file, where this crate puts them.
                break;
            }
            lines.next();
            continue;
        }
        let without_comment = line.split("//").next().unwrap_or("");
        code.push_str(without_comment);
        code.push('\n');
    }
    code
}

/// Every import between top-level modules: (from, to) -> the files that make it.
fn imports(root: &Path) -> BTreeMap<(String, String), BTreeSet<PathBuf>> {
    let src = root.join("src");
    let path = regex::Regex::new(r"crate::([a-z_][a-z0-9_]*)").unwrap();
    let mut found: BTreeMap<(String, String), BTreeSet<PathBuf>> = BTreeMap::new();
    for entry in walkdir::WalkDir::new(&src) {
        let entry = entry.unwrap();
        let file = entry.path();
        if file.extension().is_none_or(|e| e != "rs") || file.ends_with("tests.rs") {
            continue;
        }
        let Some(from) = top_module(&src, file) else {
            continue;
        };
        let code = non_test_code(&std::fs::read_to_string(file).unwrap());
        for capture in path.captures_iter(&code) {
            let to = capture[1].to_owned();
            if to != from {
                found
                    .entry((from.clone(), to))
                    .or_default()
                    .insert(file.strip_prefix(root).unwrap().to_owned());
            }
        }
    }
    found
}

#[test]
fn top_level_modules_import_only_from_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers = declared_layers(root);
    let src = root.join("src");
    let modules: BTreeSet<String> = std::fs::read_dir(&src)
        .unwrap()
        .filter_map(|e| top_module(&src, &e.unwrap().path()))
        .collect();
    let unplaced: Vec<&String> = modules
        .iter()
        .filter(|m| !layers.contains_key(*m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules missing from {LAYOUT}'s layers: {unplaced:?}"
    );
    let mut upward = Vec::new();
    for ((from, to), files) in imports(root) {
        let (Some(low), Some(high)) = (layers.get(&to), layers.get(&from)) else {
            continue;
        };
        if low >= high {
            upward.push(format!(
                "{from} (layer {high}) imports {to} (layer {low}) in {files:?}"
            ));
        }
    }
    assert!(
        upward.is_empty(),
        "imports that do not point down:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_check_sees_an_import_and_skips_comments_and_tests() {
    let code = non_test_code(
        "use crate::store::Neighbour; // crate::cli\n#[cfg(test)]\nuse crate::eval;\n\
         fn f() { crate::text::words(); }\n#[cfg(test)]\nmod tests {\n use crate::cli;\n}\n",
    );
    assert!(code.contains("crate::store") && code.contains("crate::text"));
    assert!(!code.contains("crate::cli") && !code.contains("crate::eval"));
}

#[test]
fn every_path_the_layout_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layout = std::fs::read_to_string(root.join(LAYOUT)).unwrap();
    let tree = layout.split("```").nth(1).expect("a tree in a code block");
    let mut missing = Vec::new();
    let mut named = 0;
    for line in tree.lines() {
        // `  name/` and `  name.rs` lie under src/; `name/` at the start of a line, at the root.
        let (base, rest) = match line.strip_prefix("  ") {
            Some(rest) => (root.join("src"), rest),
            None => (root.to_owned(), line),
        };
        let Some(name) = rest.split_whitespace().next() else {
            continue;
        };
        if rest.starts_with(' ') || !(name.ends_with('/') || name.ends_with(".rs")) {
            continue;
        }
        named += 1;
        if !base.join(name).exists() {
            missing.push(base.join(name));
        }
    }
    assert!(named > 20, "the tree names {named} paths");
    assert!(
        missing.is_empty(),
        "{LAYOUT} names paths that do not exist: {missing:?}"
    );
}

/// The orders of docs/layout.md's "Inside folders" list, bottom first: lines
/// ``- `folder/`: `child` `child` ...``.
fn declared_folder_orders(root: &Path) -> Vec<(String, Vec<String>)> {
    let layout = std::fs::read_to_string(root.join(LAYOUT)).unwrap();
    let section = layout
        .split("\n## Inside folders\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{LAYOUT} has an `## Inside folders` section"));
    let names = |text: &str| -> Vec<String> {
        text.split_whitespace()
            .map(|n| {
                n.trim_matches(|c| c == '`' || c == ',' || c == '/')
                    .to_owned()
            })
            .collect()
    };
    section
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|line| line.strip_prefix("- "))
        .filter_map(|line| line.split_once(':'))
        .map(|(folder, children)| (names(folder).concat(), names(children)))
        .collect()
}

/// The child modules of `folder`: its files but `mod.rs`, and its folders of code (not of
/// test data).
fn child_modules(folder: &Path) -> BTreeSet<String> {
    let holds_code = |dir: &Path| {
        walkdir::WalkDir::new(dir)
            .into_iter()
            .filter_map(|e| e.ok())
            .any(|e| e.path().extension().is_some_and(|x| x == "rs"))
    };
    std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| match p.is_dir() {
            true if !holds_code(&p) => None,
            true => p.file_name()?.to_str().map(str::to_owned),
            false => (p.extension()? == "rs" && !p.ends_with("mod.rs"))
                .then(|| p.file_stem()?.to_str().map(str::to_owned))?,
        })
        .collect()
}

/// The first name of each item a path imports: `{a::B, C}` gives `a` and `C`; `D` gives `D`.
fn imported_names(items: &str) -> Vec<String> {
    let Some(group) = items.strip_prefix('{') else {
        return vec![items.to_owned()];
    };
    let mut names = Vec::new();
    let (mut depth, mut start) = (0, 0);
    let group = group.strip_suffix('}').unwrap_or(group);
    for (at, c) in group.char_indices().chain([(group.len(), ',')]) {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let segment = group[start..at].trim();
                let name: String = segment
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.push(name);
                }
                start = at + 1;
            }
            _ => {}
        }
    }
    names
}

/// What each child of `folder` (under `src/`) imports from its siblings and its `mod.rs`:
/// (child, the sibling or `mod.rs`) -> the files that do. An item of `mod.rs` that it
/// re-exports from a child (`pub use child::Item`) counts as that child's.
fn folder_imports(src: &Path, folder: &str) -> BTreeMap<(String, String), BTreeSet<String>> {
    let dir = src.join(folder);
    let children = child_modules(&dir);
    let parent = non_test_code(&std::fs::read_to_string(dir.join("mod.rs")).unwrap());
    // `use child::Item` (public or not) in `mod.rs` makes `super::Item` the child's.
    let reexport = regex::Regex::new(
        r"(?m)^(?:pub(?:\([a-z]+\))?\s+)?use\s+(?:self::)?([a-z_0-9]+)::(\{[^;]*\}|\w+)",
    )
    .unwrap();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for capture in reexport.captures_iter(&parent) {
        if children.contains(&capture[1]) {
            for item in imported_names(&capture[2]) {
                owner.insert(item, capture[1].to_owned());
            }
        }
    }
    let mut found: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for child in &children {
        // `child.rs`, and the files of `child/` (its `mod.rs`, or its children).
        let at = dir.join(child);
        let own = Some(at.with_extension("rs")).filter(|f| f.is_file());
        let below = walkdir::WalkDir::new(&at)
            .into_iter()
            .filter_map(|e| e.ok().map(|e| e.into_path()))
            .filter(|p| p.extension().is_some_and(|e| e == "rs"));
        let files: Vec<PathBuf> = own.into_iter().chain(below).collect();
        for file in files {
            // `super::` once for a file in the folder, once more for each folder below.
            let relative = file.strip_prefix(&dir).unwrap();
            let mut depth = relative.components().count();
            if file.ends_with("mod.rs") {
                depth -= 1;
            }
            let up = "super::".repeat(depth);
            let crate_path = format!("crate::{}::", folder.replace('/', "::"));
            let code = non_test_code(&std::fs::read_to_string(&file).unwrap());
            for prefix in [up.as_str(), crate_path.as_str()] {
                let path =
                    regex::Regex::new(&format!(r"{}(\{{[^;]*?\}}|\w+)", regex::escape(prefix)))
                        .unwrap();
                for capture in path.captures_iter(&code) {
                    let start = capture.get(0).unwrap().start();
                    if prefix == up && code[..start].ends_with("super::") {
                        continue;
                    }
                    for name in imported_names(&capture[1]) {
                        let to = match () {
                            _ if children.contains(&name) => name,
                            _ if owner.contains_key(&name) => owner[&name].clone(),
                            _ => "mod.rs".to_owned(),
                        };
                        if &to != child {
                            let file = file.strip_prefix(src).unwrap().display().to_string();
                            found.entry((child.clone(), to)).or_default().insert(file);
                        }
                    }
                }
            }
        }
    }
    found
}

#[test]
fn inside_a_folder_that_declares_an_order_children_import_only_earlier_children() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let orders = declared_folder_orders(root);
    assert!(
        orders.len() >= 5,
        "{LAYOUT} declares {} folders",
        orders.len()
    );
    let mut wrong = Vec::new();
    for (folder, order) in &orders {
        let children = child_modules(&src.join(folder));
        let declared: BTreeSet<String> = order.iter().cloned().collect();
        if declared != children {
            wrong.push(format!(
                "{folder}/ holds {children:?}, the order names {declared:?}"
            ));
            continue;
        }
        let place = |name: &str| order.iter().position(|n| n == name);
        for ((from, to), files) in folder_imports(&src, folder) {
            match (place(&from), place(&to)) {
                (_, None) => wrong.push(format!(
                    "{folder}/{from} imports what {folder}/mod.rs defines, in {files:?}: move it \
                     into a child"
                )),
                (Some(low), Some(high)) if high >= low => wrong.push(format!(
                    "{folder}/{from} imports {folder}/{to}, declared after it, in {files:?}"
                )),
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_folder_check_reads_groups_nested_paths_and_reexports() {
    assert_eq!(imported_names("{a::B, C, d::{E, F}}"), ["a", "C", "d"]);
    assert_eq!(imported_names("Item"), ["Item"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // `search/neighbours.rs` uses the cells; `search/cells/` the codes.
    let found = folder_imports(&root.join("src"), "search");
    assert!(
        found.contains_key(&("neighbours".into(), "cells".into())),
        "{found:?}"
    );
    assert!(
        found.contains_key(&("cells".into(), "codes".into())),
        "{found:?}"
    );
}
