//! The workspace's import rules, checked (DEVELOPERS.md, "Layout and architecture"):
//!
//! - **No circle of modules inside a crate.** Every crate target (library, binaries) is parsed from its
//!   root file along its `mod` declarations. A path that names an item of the same crate (`use crate::…`,
//!   `super::…`, `self::…`, in a `use`, in code or in a macro's tokens) is an arrow from the module it is
//!   written in to the module it names, collapsed to the two *siblings* that contain them: `a::x` naming
//!   `b::y` is the arrow `a → b` between two top-level modules, `a::x` naming `a::y::z` is `a::x → a::y`
//!   inside the folder `a`. A module's own items (those of its file, not of its children) are a node of
//!   their own, `a::(own)`, beside its children: a child naming an item of its parent's file is the
//!   arrow `a::x → a::(own)`, the parent's file naming its child's items `a::(own) → a::x` (a
//!   re-export, `pub use x::Thing`, makes none: it is the facade, not a use). So a `mod.rs` that
//!   defines what its children use and uses what they define is a circle too. A strongly connected
//!   component of two or more nodes is a circle; each is printed with the uses that close it.
//!   Code under `#[cfg(test)]` is left out: a test may name what it needs from anywhere.
//! - **Dependencies point down the layers of [`LAYERS`]**: a normal or build dependency of one
//!   workspace crate on another goes to a lower layer. Dev-dependencies are free (tests of a lower crate
//!   may run a higher one), and the dev-only crates sit above every shipped one, so that no shipped crate
//!   can depend on them.
//! - **No public item that nothing names.** A `pub` function, constant or static of a shipped crate
//!   (free, or in an inherent `impl`) whose name is written nowhere else in the workspace (sources,
//!   tests, examples; comments left out) is a face nobody uses: `unreachable_pub` does not see it when
//!   its module is public. By name, not by resolution: a name that another item shares hides it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Each workspace crate's layer, lowest first. A normal dependency goes to a lower layer only; a new
/// crate needs its row.
const LAYERS: &[(&str, u8)] = &[
    // The data model's and the processes' bottom: serde, clap; nothing of ours.
    ("capi-object", 0),
    ("capi-runtime", 0),
    // Data model and Kubernetes plumbing, over `capi-object`.
    ("capi-manifests", 1),
    // What live objects say (readiness, CRD change safety, managed fields, fights), no client.
    ("capi-live", 1),
    ("capi-openshift", 1),
    // The apply engine, over what it judges of live objects.
    ("capi-apply", 2),
    // The CRD compatibility judgement (no client), over the data model's budgeted YAML.
    ("capi-compat", 2),
    // The bundle policy (no client).
    ("capi-policy", 3),
    // Pure planning over the data model and the policy: sources, rounds, rendering, CRD
    // compatibility before a write (no client).
    ("capi-bundle", 4),
    // Pure status from the planning's outcomes (no client).
    ("capi-status", 5),
    // The controller libraries.
    ("capi-installer-controller", 6),
    ("capi-deployer", 6),
    ("capi-cluster-controllers", 6),
    ("capi-admission", 6),
    // The commands' back ends, over the installer library.
    ("capi-commands", 7),
    // The binaries.
    ("capi-installer", 8),
    ("capi-controllers", 8),
    ("manifests-gen", 8),
    // Dev-only, above every shipped crate: no shipped crate may depend on them but as a dev-dependency.
    ("control-plane", 9),
    ("test-support", 10),
    // The benchmarks, over everything.
    ("capi-benchmarks", 11),
];

#[test]
fn no_module_circle_in_any_crate() {
    let mut report = String::new();
    let mut checked = 0;
    for package in workspace() {
        for root in &package.roots {
            let graph = ModuleGraph::parse(&package.dir, root);
            checked += graph.files.len();
            for circle in graph.circles() {
                writeln!(report, "{}: {circle}", package.name).unwrap();
            }
        }
    }
    assert!(checked > 100, "only {checked} source files found");
    assert!(
        report.is_empty(),
        "module circles (DEVELOPERS.md: no module imports one that imports it back):\n{report}"
    );
}

#[test]
fn crates_depend_downwards() {
    let packages = workspace();
    let names: BTreeSet<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    for name in &names {
        assert!(
            layers.contains_key(name),
            "crate {name} has no row in LAYERS (crates/test-support/tests/layering.rs): give it its layer"
        );
    }
    let arrows: Vec<(&str, &str)> = packages
        .iter()
        .flat_map(|p| {
            p.dependencies
                .iter()
                .filter(|d| names.contains(d.as_str()))
                .map(|d| (p.name.as_str(), d.as_str()))
        })
        .collect();
    assert!(
        !arrows.is_empty(),
        "no dependency between workspace crates found"
    );
    let wrong = upward(&arrows, &layers);
    assert!(
        wrong.is_empty(),
        "dependencies that do not point to a lower layer (LAYERS in crates/test-support/tests/layering.rs):\n{}",
        wrong.join("\n")
    );
}

/// The first layer of [`LAYERS`] that ships nothing.
const DEV_ONLY: u8 = 8;

#[test]
fn every_public_item_is_named_outside_its_definition() {
    let packages = workspace();
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let mut public: Vec<PublicItem> = Vec::new();
    for package in &packages {
        let shipped = layers
            .get(package.name.as_str())
            .is_some_and(|layer| *layer < DEV_ONLY);
        for file in rust_files(&package.dir) {
            let text = std::fs::read_to_string(&file).expect("source file");
            let tokens: TokenStream = text
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            count_idents(tokens, &mut names);
            if shipped && file.starts_with(package.dir.join("src")) {
                let ast =
                    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                let mut found = PublicItems {
                    file: relative(&package.dir, &file),
                    crate_name: &package.name,
                    items: &mut public,
                };
                found.visit_file(&ast);
            }
        }
    }
    assert!(
        public.len() > 100,
        "only {} public items found",
        public.len()
    );
    let unnamed: Vec<String> = public
        .iter()
        .filter(|item| names.get(&item.name).copied().unwrap_or(0) <= 1)
        .map(|item| item.to_string())
        .collect();
    assert!(
        unnamed.is_empty(),
        "public items whose name is written nowhere but their definition (remove them, or narrow them to \
         what uses them: `pub(crate)`, `#[cfg(test)]`):\n{}",
        unnamed.join("\n")
    );
}

/// A `pub` function, constant or static, where it is defined.
struct PublicItem {
    crate_name: String,
    file: String,
    line: usize,
    name: String,
}

impl std::fmt::Display for PublicItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let PublicItem {
            crate_name,
            file,
            line,
            name,
        } = self;
        write!(f, "{crate_name}: {file}:{line}: {name}")
    }
}

/// Collects the `pub` functions, constants and statics of a file: free, in inline modules, and in
/// inherent `impl` blocks (a trait's methods are named by the trait); test-only code left out.
struct PublicItems<'a> {
    crate_name: &'a str,
    file: String,
    items: &'a mut Vec<PublicItem>,
}

impl PublicItems<'_> {
    fn found(&mut self, vis: &syn::Visibility, attrs: &[syn::Attribute], ident: &syn::Ident) {
        if matches!(vis, syn::Visibility::Public(_)) && !test_only(attrs) {
            self.items.push(PublicItem {
                crate_name: self.crate_name.to_string(),
                file: self.file.clone(),
                line: ident.span().start().line,
                name: ident.to_string(),
            });
        }
    }
}

impl<'ast> Visit<'ast> for PublicItems<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if test_only(item_attrs(item)) {
            return;
        }
        match item {
            syn::Item::Fn(f) => self.found(&f.vis, &f.attrs, &f.sig.ident),
            syn::Item::Const(c) => self.found(&c.vis, &c.attrs, &c.ident),
            syn::Item::Static(s) => self.found(&s.vis, &s.attrs, &s.ident),
            syn::Item::Impl(block) if block.trait_.is_none() => {
                for member in &block.items {
                    match member {
                        syn::ImplItem::Fn(f) => self.found(&f.vis, &f.attrs, &f.sig.ident),
                        syn::ImplItem::Const(c) => self.found(&c.vis, &c.attrs, &c.ident),
                        _ => {}
                    }
                }
            }
            syn::Item::Mod(_) => syn::visit::visit_item(self, item),
            _ => {}
        }
    }
}

/// Adds one to `names` for every identifier of `tokens` (comments are not tokens), and for every
/// name a string literal captures as a format argument (`"{PROGRESSING}"`, `"{width:>4}"`).
fn count_idents(tokens: TokenStream, names: &mut BTreeMap<String, usize>) {
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => *names.entry(ident.to_string()).or_default() += 1,
            TokenTree::Group(group) => count_idents(group.stream(), names),
            TokenTree::Literal(literal) => {
                for name in format_captures(&literal.to_string()) {
                    *names.entry(name.to_string()).or_default() += 1;
                }
            }
            TokenTree::Punct(_) => {}
        }
    }
}

/// The identifiers `text` names as `{name}` or `{name:spec}` (`{{` is no capture).
fn format_captures(text: &str) -> Vec<&str> {
    let mut captures = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(escaped) = rest.strip_prefix('{') {
            rest = escaped;
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        let starts_as_ident = name.starts_with(|c: char| c.is_alphabetic() || c == '_');
        if starts_as_ident && rest[end..].starts_with(['}', ':']) {
            captures.push(name);
        }
        rest = &rest[end..];
    }
    captures
}

/// Every `.rs` file under `dir`, build output left out.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("source folder") {
            let path = entry.expect("folder entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The arrows `from → to` that do not go to a lower layer.
fn upward(arrows: &[(&str, &str)], layers: &BTreeMap<&str, u8>) -> Vec<String> {
    arrows
        .iter()
        .filter(|(from, to)| layers[from] <= layers[to])
        .map(|(from, to)| {
            format!(
                "  {from} (layer {}) → {to} (layer {})",
                layers[from], layers[to]
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------
// The workspace, from `cargo metadata`.

struct Package {
    name: String,
    dir: PathBuf,
    /// The root files of the crate's library and binaries.
    roots: Vec<PathBuf>,
    /// Normal and build dependencies (dev-dependencies left out).
    dependencies: BTreeSet<String>,
}

fn workspace() -> Vec<Package> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    // The test binary may run outside cargo (hack/test.sh): the cargo that built it.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    packages
        .iter()
        .map(|p| {
            let manifest_path = PathBuf::from(p["manifest_path"].as_str().unwrap());
            let roots =
                p["targets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|t| {
                        t["kind"].as_array().unwrap().iter().any(|k| {
                            matches!(k.as_str(), Some("lib" | "rlib" | "bin" | "proc-macro"))
                        })
                    })
                    .map(|t| PathBuf::from(t["src_path"].as_str().unwrap()))
                    .collect();
            let dependencies = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            Package {
                name: p["name"].as_str().unwrap().to_string(),
                dir: manifest_path.parent().unwrap().to_path_buf(),
                roots,
                dependencies,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------
// One crate's modules and the arrows between them.

type ModPath = Vec<String>;

/// A path naming an item of the crate, where it is written.
#[derive(Clone, Debug)]
struct Use {
    /// The module the path is written in.
    from: ModPath,
    /// The path as written (`crate::…`, `super::…`, `self::…`).
    written: Vec<String>,
    /// File (relative to the package) and line.
    at: String,
    /// In a `pub use` (or `pub(crate) use`): a re-export, which makes no arrow from a parent to its
    /// child.
    reexport: bool,
}

/// The node of a module's own items, beside its children's ([`sibling_arrow`]).
const OWN: &str = "(own)";

struct ModuleGraph {
    /// Every module of the crate (files and inline `mod` blocks).
    modules: BTreeSet<ModPath>,
    /// Every file of the crate and its module.
    files: Vec<(PathBuf, ModPath)>,
    uses: Vec<Use>,
    /// What each `use` brings into its module by name: (module, name) → the path as written there.
    /// A path through a re-export (`crate::Installer` for `pub use controller::Installer`) names the
    /// module the item comes from.
    imports: BTreeMap<(ModPath, String), Vec<String>>,
    /// The crate's root, relative to its package, for messages.
    root: String,
}

impl ModuleGraph {
    fn parse(package_dir: &Path, root: &Path) -> Self {
        let mut graph = ModuleGraph {
            modules: BTreeSet::from([Vec::new()]),
            files: Vec::new(),
            uses: Vec::new(),
            imports: BTreeMap::new(),
            root: relative(package_dir, root),
        };
        let mut queue = VecDeque::from([(root.to_path_buf(), Vec::new(), true)]);
        while let Some((file, module, mod_rs)) = queue.pop_front() {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let parsed = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), e.span().start().line));
            let children_dir = if mod_rs {
                file.parent().unwrap().to_path_buf()
            } else {
                file.with_extension("")
            };
            let mut visitor = FileVisitor {
                file_dir: file.parent().unwrap().to_path_buf(),
                children_dir,
                inline: Vec::new(),
                module,
                at: relative(package_dir, &file),
                modules: &mut graph.modules,
                uses: &mut graph.uses,
                imports: &mut graph.imports,
                files: Vec::new(),
                reexporting: false,
            };
            visitor.visit_file(&parsed);
            queue.extend(visitor.files);
            graph.files.push((file, visitor.module));
        }
        graph
    }

    /// The arrows between siblings, each with the uses that make it (first one first).
    fn arrows(&self) -> BTreeMap<(ModPath, ModPath), Vec<Use>> {
        let mut arrows: BTreeMap<(ModPath, ModPath), Vec<Use>> = BTreeMap::new();
        for u in &self.uses {
            let Some(target) = self.target(&u.from, &u.written) else {
                continue;
            };
            let facade = u.reexport && target.starts_with(&u.from);
            if let Some(arrow) = sibling_arrow(&u.from, &target).filter(|_| !facade) {
                arrows.entry(arrow).or_default().push(u.clone());
            }
        }
        arrows
    }

    /// The module that `written`, in module `from`, names an item of (or is), through re-exports;
    /// `None` for a path outside the crate.
    fn target(&self, from: &[String], written: &[String]) -> Option<ModPath> {
        let mut path = absolute(from, written, &self.modules)?;
        // A chain of re-exports is short; the bound stops a `use` that names itself.
        for _ in 0..16 {
            // The longest prefix of the path that is a module: what it names is in there.
            let module = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| self.modules.contains(p))
                .unwrap_or_default();
            let Some(name) = path.get(module.len()) else {
                return Some(module);
            };
            let Some(imported) = self.imports.get(&(module.clone(), name.clone())) else {
                return Some(module);
            };
            let Some(mut next) = absolute(&module, imported, &self.modules) else {
                return Some(module);
            };
            next.extend(path[module.len() + 1..].iter().cloned());
            path = next;
        }
        None
    }

    fn circles(&self) -> Vec<Circle> {
        let arrows = self.arrows();
        let nodes: Vec<ModPath> = arrows
            .keys()
            .flat_map(|(a, b)| [a.clone(), b.clone()])
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let index: BTreeMap<&ModPath, usize> =
            nodes.iter().enumerate().map(|(i, n)| (n, i)).collect();
        let mut edges = vec![Vec::new(); nodes.len()];
        for (a, b) in arrows.keys() {
            edges[index[a]].push(index[b]);
        }
        strongly_connected(&edges)
            .into_iter()
            .map(|component| {
                let chain = shortest_circle(&edges, &component);
                let closing = chain
                    .iter()
                    .zip(chain.iter().cycle().skip(1))
                    .map(|(&a, &b)| {
                        let first = &arrows[&(nodes[a].clone(), nodes[b].clone())][0];
                        format!(
                            "{} → {}: {} `{}`",
                            nodes[a].join("::"),
                            nodes[b].join("::"),
                            first.at,
                            first.written.join("::")
                        )
                    })
                    .collect();
                let members: Vec<ModPath> = component.iter().map(|&i| nodes[i].clone()).collect();
                let files = self.modules_files(&members);
                Circle {
                    root: self.root.clone(),
                    members,
                    files,
                    closing,
                }
            })
            .collect()
    }

    /// How many files the given modules (with their descendants) span.
    fn modules_files(&self, members: &[ModPath]) -> usize {
        self.files
            .iter()
            .filter(|(_, module)| members.iter().any(|m| module.starts_with(m)))
            .count()
    }
}

struct Circle {
    root: String,
    members: Vec<ModPath>,
    files: usize,
    /// One shortest chain of arrows around the circle, with the first use making each.
    closing: Vec<String>,
}

impl std::fmt::Display for Circle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.members.iter().map(|m| m.join("::")).collect();
        writeln!(
            f,
            "({}) a circle of {} modules ({} files): {}",
            self.root,
            self.members.len(),
            self.files,
            names.join(", ")
        )?;
        writeln!(f, "  closed by:")?;
        for line in &self.closing {
            writeln!(f, "    {line}")?;
        }
        Ok(())
    }
}

/// `written`, in module `from`, made absolute (from the crate root); `None` for a path that names
/// no item of the crate (an extern crate, the prelude).
fn absolute(
    from: &[String],
    written: &[String],
    modules: &BTreeSet<ModPath>,
) -> Option<Vec<String>> {
    let first = written.first()?;
    let mut path = match first.as_str() {
        "crate" | "$crate" => Vec::new(),
        "self" => from.to_vec(),
        "super" => {
            let ups = written.iter().take_while(|s| *s == "super").count();
            from.get(..from.len().checked_sub(ups)?)?.to_vec()
        }
        // A child module of `from` (a `use` of the 2018 edition's uniform paths).
        _ => {
            let mut child = from.to_vec();
            child.push(first.clone());
            if !modules.contains(&child) {
                return None;
            }
            from.to_vec()
        }
    };
    let rest = written
        .iter()
        .skip_while(|s| matches!(s.as_str(), "crate" | "$crate" | "self" | "super"));
    path.extend(rest.filter(|s| *s != "self").cloned());
    Some(path)
}

/// The arrow that a path written in `from` naming an item of module `to` makes: between the two children
/// of their deepest common ancestor that contain them; when one contains the other, between the
/// ancestor's own items ([`OWN`]) and its child that holds the other; none within one module.
fn sibling_arrow(from: &[String], to: &[String]) -> Option<(ModPath, ModPath)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    let own = |m: &[String]| {
        let mut m = m.to_vec();
        m.push(OWN.to_string());
        m
    };
    match (common == from.len(), common == to.len()) {
        (true, true) => None,
        (false, true) => Some((from[..=common].to_vec(), own(to))),
        (true, false) => Some((own(from), to[..=common].to_vec())),
        (false, false) => Some((from[..=common].to_vec(), to[..=common].to_vec())),
    }
}

/// Walks one file: its modules, the files of its `mod x;` declarations, and the paths it writes.
struct FileVisitor<'g> {
    /// The file's own folder (`#[path]` outside inline modules is relative to it).
    file_dir: PathBuf,
    /// Where the file's `mod x;` declarations live.
    children_dir: PathBuf,
    /// The inline modules around the current item, inside this file.
    inline: Vec<String>,
    /// The file's module.
    module: ModPath,
    at: String,
    modules: &'g mut BTreeSet<ModPath>,
    uses: &'g mut Vec<Use>,
    imports: &'g mut BTreeMap<(ModPath, String), Vec<String>>,
    /// Files to read: path, module, whether it is a `mod.rs`-like file.
    files: Vec<(PathBuf, ModPath, bool)>,
    /// Inside a `pub use`.
    reexporting: bool,
}

impl FileVisitor<'_> {
    fn current(&self) -> ModPath {
        let mut m = self.module.clone();
        m.extend(self.inline.iter().cloned());
        m
    }

    /// Records `segments` (as written, without a leading `::`): what names no item of the crate (an
    /// extern crate, a prelude name) is told apart when the graph is complete ([`absolute`]).
    fn record(&mut self, segments: &[String], line: usize) {
        self.uses.push(Use {
            from: self.current(),
            written: segments.to_vec(),
            at: format!("{}:{line}", self.at),
            reexport: self.reexporting,
        });
    }

    /// Remembers what a `use` brings into this module as `name`.
    fn import(&mut self, name: String, segments: &[String]) {
        self.imports
            .insert((self.current(), name), segments.to_vec());
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let line = n.ident.span().start().line;
                if n.ident == "self" {
                    self.record(&prefix.clone(), line);
                    if let Some(last) = prefix.last() {
                        self.import(last.clone(), &prefix.clone());
                    }
                } else {
                    prefix.push(n.ident.to_string());
                    self.record(&prefix.clone(), line);
                    self.import(n.ident.to_string(), &prefix.clone());
                    prefix.pop();
                }
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.record(&prefix.clone(), r.ident.span().start().line);
                self.import(r.rename.to_string(), &prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Glob(g) => {
                self.record(&prefix.clone(), g.star_token.spans[0].start().line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Paths inside a macro's tokens (`format!("{}", crate::names::X)`): `crate`, `$crate`, `super`
    /// or `self` followed by `::` and identifiers.
    fn macro_tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(g) => {
                    self.macro_tokens(g.stream());
                    i += 1;
                }
                TokenTree::Ident(id)
                    if (id == "crate" || id == "super" || id == "self")
                        && !(i > 0 && is_colon(&tokens[i - 1])) =>
                {
                    let dollar = i > 0
                        && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                    let mut segments = vec![if dollar {
                        "$crate".to_string()
                    } else {
                        id.to_string()
                    }];
                    let line = id.span().start().line;
                    let mut j = i + 1;
                    while j + 2 < tokens.len() && is_colon(&tokens[j]) && is_colon(&tokens[j + 1]) {
                        match &tokens[j + 2] {
                            TokenTree::Ident(next) => {
                                segments.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if segments.len() > 1 {
                        self.record(&segments, line);
                    }
                    i = j.max(i + 1);
                }
                _ => i += 1,
            }
        }
    }
}

fn is_colon(t: &TokenTree) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == ':')
}

/// `#[cfg(test)]`, or a `cfg` that needs `test` (`all(test, …)`).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && match &a.meta {
                syn::Meta::List(list) => {
                    let text = list.tokens.to_string();
                    let words: Vec<&str> = text
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .collect();
                    words.contains(&"test") && !words.contains(&"not") && !words.contains(&"any")
                }
                _ => false,
            }
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for FileVisitor<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if test_only(item_attrs(item)) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        if let syn::Stmt::Local(local) = stmt
            && test_only(&local.attrs)
        {
            return;
        }
        syn::visit::visit_stmt(self, stmt);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let name = item.ident.to_string();
        let mut module = self.current();
        module.push(name.clone());
        self.modules.insert(module.clone());
        match &item.content {
            Some((_, items)) => {
                self.inline.push(name);
                for i in items {
                    self.visit_item(i);
                }
                self.inline.pop();
            }
            None => {
                let mut dir = self.children_dir.clone();
                dir.extend(&self.inline);
                let explicit = item.attrs.iter().find_map(|a| match &a.meta {
                    syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) => Some(s.value()),
                        _ => None,
                    },
                    _ => None,
                });
                let (file, mod_rs) = match explicit {
                    // Outside inline modules relative to the file's folder, inside them to the folder
                    // of their would-be files (the Reference, "the path attribute").
                    Some(p) if self.inline.is_empty() => {
                        let f = self.file_dir.join(p);
                        let mod_rs = f.file_name().is_some_and(|n| n == "mod.rs");
                        (f, mod_rs)
                    }
                    Some(p) => {
                        let f = dir.join(p);
                        let mod_rs = f.file_name().is_some_and(|n| n == "mod.rs");
                        (f, mod_rs)
                    }
                    None => {
                        let flat = dir.join(format!("{name}.rs"));
                        if flat.exists() {
                            (flat, false)
                        } else {
                            (dir.join(&name).join("mod.rs"), true)
                        }
                    }
                };
                self.files.push((file, module, mod_rs));
            }
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if item.leading_colon.is_none() {
            self.reexporting = !matches!(item.vis, syn::Visibility::Inherited);
            self.use_tree(&mut Vec::new(), &item.tree);
            self.reexporting = false;
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = path.segments[0].ident.span().start().line;
            self.record(&segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        self.macro_tokens(mac.tokens.clone());
    }

    // `pub(in crate::x)` names where an item may be seen, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    // Attributes' tokens (`#[doc]`, `#[serde(...)]`) name no module this one uses.
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}
}

fn relative(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

// ---------------------------------------------------------------------------------------------------
// Graph algorithms.

/// Tarjan's strongly connected components of `edges` (node → successors), those with two nodes or
/// more, each sorted, in the order found.
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'e> {
        edges: &'e [Vec<usize>],
        next: usize,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        components: Vec<Vec<usize>>,
    }
    fn connect(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.edges[v] {
            match s.index[w] {
                None => {
                    connect(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 || s.edges[v].contains(&v) {
                component.sort_unstable();
                s.components.push(component);
            }
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        next: 0,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        components: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            connect(&mut s, v);
        }
    }
    s.components
}

/// A shortest circle through the component's first node, inside the component: the nodes in order
/// (the last one's arrow goes back to the first).
fn shortest_circle(edges: &[Vec<usize>], component: &[usize]) -> Vec<usize> {
    let start = component[0];
    let inside: BTreeSet<usize> = component.iter().copied().collect();
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &edges[v] {
            if w == start {
                let mut chain = vec![v];
                while let Some(&p) = chain.last().and_then(|c| came_from.get(c)) {
                    chain.push(p);
                }
                chain.reverse();
                return chain;
            }
            if inside.contains(&w) && !came_from.contains_key(&w) {
                came_from.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    unreachable!("a strongly connected component has a circle through each node")
}

// ---------------------------------------------------------------------------------------------------
// The checker's own tests, on small inputs.

fn graph(n: usize, arrows: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut edges = vec![Vec::new(); n];
    for &(a, b) in arrows {
        edges[a].push(b);
    }
    edges
}

/// One table row: what the graph is, how many modules, its arrows, the circles expected.
type TarjanCase<'a> = (&'a str, usize, &'a [(usize, usize)], &'a [&'a [usize]]);

#[test]
fn format_captures_are_names_in_braces() {
    assert_eq!(
        format_captures(r#""{controller}{PROGRESSING} {{literal}} {0} {width:>4} {} {a.b}""#),
        ["controller", "PROGRESSING", "width"]
    );
}

#[test]
fn tarjan_finds_circles_and_only_circles() {
    let cases: &[TarjanCase<'_>] = &[
        ("no arrows", 3, &[], &[]),
        ("a chain", 4, &[(0, 1), (1, 2), (2, 3)], &[]),
        ("a diamond", 4, &[(0, 1), (0, 2), (1, 3), (2, 3)], &[]),
        (
            "two modules naming each other",
            2,
            &[(0, 1), (1, 0)],
            &[&[0, 1]],
        ),
        ("a self arrow", 2, &[(1, 1)], &[&[1]]),
        (
            "a circle of three with a tail in and out",
            6,
            &[(0, 1), (1, 2), (2, 3), (3, 1), (3, 4), (5, 0)],
            &[&[1, 2, 3]],
        ),
        (
            "two separate circles",
            5,
            &[(0, 1), (1, 0), (2, 3), (3, 4), (4, 2), (1, 2)],
            &[&[2, 3, 4], &[0, 1]],
        ),
        (
            "two circles sharing a node are one",
            4,
            &[(0, 1), (1, 0), (1, 2), (2, 3), (3, 1)],
            &[&[0, 1, 2, 3]],
        ),
    ];
    for (name, n, arrows, want) in cases {
        let got = strongly_connected(&graph(*n, arrows));
        let want: Vec<Vec<usize>> = want.iter().map(|c| c.to_vec()).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn shortest_circle_is_a_real_circle() {
    // 0 → 1 → 2 → 3 → 0 and the shortcut 1 → 3.
    let edges = graph(4, &[(0, 1), (1, 2), (2, 3), (3, 0), (1, 3)]);
    assert_eq!(shortest_circle(&edges, &[0, 1, 2, 3]), vec![0, 1, 3]);
    let edges = graph(2, &[(0, 1), (1, 0)]);
    assert_eq!(shortest_circle(&edges, &[0, 1]), vec![0, 1]);
}

fn p(path: &str) -> ModPath {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn arrows_join_siblings_and_a_modules_own_items_to_its_children() {
    let cases = [
        ("a", "b", Some(("a", "b"))),
        ("a::x", "b::y", Some(("a", "b"))),
        ("a::x", "a::y::z", Some(("a::x", "a::y"))),
        ("a::x::deep", "a::y", Some(("a::x", "a::y"))),
        // A child naming its parent's own items (`super::…`), a parent naming its child's.
        ("a::x", "a", Some(("a::x", "a::(own)"))),
        ("a", "a::x::y", Some(("a::(own)", "a::x"))),
        ("a", "", Some(("a", "(own)"))),
        ("", "a", Some(("(own)", "a"))),
        ("a", "a", None),
    ];
    for (from, to, want) in cases {
        let want = want.map(|(a, b)| (p(a), p(b)));
        assert_eq!(sibling_arrow(&p(from), &p(to)), want, "{from} → {to}");
    }
}

/// Parses `files` (path → source) as one crate in a temporary folder.
fn parse_crate(files: &[(&str, &str)]) -> ModuleGraph {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    ModuleGraph::parse(dir.path(), &dir.path().join("src/lib.rs"))
}

fn arrow_names(graph: &ModuleGraph) -> Vec<String> {
    graph
        .arrows()
        .into_iter()
        .map(|((a, b), uses)| format!("{} → {} @{}", a.join("::"), b.join("::"), uses[0].at))
        .collect()
}

#[test]
fn paths_of_every_shape_make_arrows() {
    let graph = parse_crate(&[
        (
            "src/lib.rs",
            "mod a; mod b; mod c; mod d; pub mod e;\nuse a::Thing;",
        ),
        // A use tree with `self`, a group and a rename; a child module in a folder, re-exported (a
        // facade, no arrow).
        (
            "src/a.rs",
            "mod inner;\nuse crate::{b::{self, B as Bee}};\npub use inner::g;",
        ),
        // The child names its parent (a → its own items) and a sibling of its parent (a → c).
        (
            "src/a/inner.rs",
            "use super::Thing;\npub fn g() { let _ = crate::c::C; }",
        ),
        // A path in code, and one in a macro's tokens.
        (
            "src/b.rs",
            "fn f() {\n    println!(\"{}\", crate::d::D);\n}",
        ),
        // `super::` from a file module is a sibling; `self::` a child; a cfg(test) module is left out.
        (
            "src/c/mod.rs",
            "mod k;\nfn f() -> super::e::E { self::k::K }\n#[cfg(test)]\nmod tests { use crate::a::Thing; }",
        ),
        ("src/c/k.rs", "pub struct K;"),
        (
            "src/d.rs",
            "pub(in crate::a) struct D;\n#[path = \"d_extra.rs\"]\nmod extra;",
        ),
        ("src/d_extra.rs", "use crate::e::*;"),
        ("src/e.rs", "pub struct E;"),
    ]);
    assert_eq!(
        arrow_names(&graph),
        [
            "(own) → a @src/lib.rs:2",
            "a → b @src/a.rs:2",
            "a → c @src/a/inner.rs:2",
            "a::inner → a::(own) @src/a/inner.rs:1",
            "b → d @src/b.rs:2",
            "c → e @src/c/mod.rs:2",
            "c::(own) → c::k @src/c/mod.rs:2",
            "d → e @src/d_extra.rs:1",
        ]
    );
    assert!(graph.circles().is_empty());
}

#[test]
fn a_parent_and_its_child_naming_each_other_is_a_circle() {
    // m's own file defines what x uses and calls x: a circle. n only re-exports its child: none.
    let graph = parse_crate(&[
        ("src/lib.rs", "mod m; mod n;"),
        (
            "src/m/mod.rs",
            "mod x;\npub struct Report;\nfn f() { x::check() }",
        ),
        ("src/m/x.rs", "use super::Report;\npub fn check() {}"),
        (
            "src/n/mod.rs",
            "mod y;\npub use y::check;\npub struct Report;",
        ),
        ("src/n/y.rs", "use super::Report;\npub fn check() {}"),
    ]);
    let circles: Vec<Vec<String>> = graph
        .circles()
        .iter()
        .map(|c| c.members.iter().map(|m| m.join("::")).collect())
        .collect();
    assert_eq!(circles, [vec!["m::(own)", "m::x"]]);
}

#[test]
fn a_circle_is_reported_with_the_uses_that_close_it() {
    let graph = parse_crate(&[
        ("src/lib.rs", "mod a; mod b; mod c; mod d;"),
        ("src/a.rs", "use crate::b::B;"),
        ("src/b.rs", "pub struct B;\nfn f() { crate::c::g() }"),
        ("src/c.rs", "pub fn g() {}\nuse super::a;"),
        // d names a, but nothing of the circle names d.
        ("src/d.rs", "use crate::a;"),
    ]);
    let circles = graph.circles();
    assert_eq!(circles.len(), 1);
    let shown = circles[0].to_string();
    assert_eq!(
        shown,
        "(src/lib.rs) a circle of 3 modules (3 files): a, b, c\n  closed by:\n    a → b: src/a.rs:1 `crate::b::B`\n    b → c: src/b.rs:2 `crate::c::g`\n    c → a: src/c.rs:2 `super::a`\n"
    );
}

#[test]
fn a_re_export_names_the_module_the_item_comes_from() {
    // `crate::A` is `a::A` re-exported at the root, `crate::b::Bee` is `c::C` renamed in b: b names
    // a, and a names c, through them; c names a back.
    let graph = parse_crate(&[
        ("src/lib.rs", "mod a; mod b; mod c;\npub use a::A;"),
        ("src/a.rs", "pub struct A;\nfn f(_: crate::b::Bee) {}"),
        (
            "src/b.rs",
            "pub use crate::c::C as Bee;\nfn f(_: crate::A) {}",
        ),
        ("src/c.rs", "pub struct C(super::A);"),
    ]);
    assert_eq!(
        arrow_names(&graph),
        [
            "a → c @src/a.rs:2",
            "b → a @src/b.rs:2",
            "b → c @src/b.rs:1",
            "c → a @src/c.rs:1"
        ]
    );
    let circles = graph.circles();
    assert_eq!(circles.len(), 1);
    assert_eq!(circles[0].members, [p("a"), p("c")]);
}

#[test]
fn a_circle_inside_a_folder_is_its_own() {
    // x and y name each other inside the folder `m`; `m` and `n` name each other only through their
    // children, which is a circle at the top too.
    let graph = parse_crate(&[
        ("src/lib.rs", "mod m; mod n;"),
        ("src/m/mod.rs", "mod x; mod y;"),
        ("src/m/x.rs", "use super::y::Y; pub struct X;"),
        (
            "src/m/y.rs",
            "use super::x::X; pub struct Y; fn f() { crate::n::g() }",
        ),
        ("src/n.rs", "pub fn g() {}\nuse crate::m::x;"),
    ]);
    let mut circles: Vec<Vec<String>> = graph
        .circles()
        .iter()
        .map(|c| c.members.iter().map(|m| m.join("::")).collect())
        .collect();
    circles.sort();
    assert_eq!(circles, [vec!["m", "n"], vec!["m::x", "m::y"]]);
}

#[test]
fn layers_refuse_an_upward_or_level_arrow() {
    let layers: BTreeMap<&str, u8> = [("low", 0), ("mid", 1), ("mid2", 1), ("high", 2)].into();
    assert!(upward(&[("high", "mid"), ("mid", "low"), ("high", "low")], &layers).is_empty());
    assert_eq!(
        upward(
            &[("low", "high"), ("mid", "mid2"), ("high", "low")],
            &layers
        ),
        [
            "  low (layer 0) → high (layer 2)",
            "  mid (layer 1) → mid2 (layer 1)"
        ]
    );
}
