//! One BPMN file -> `Definitions`.
//!
//! Read in phases, one module each:
//! - `definitions`: the children of `bpmn:definitions` (messages, errors, signals,
//!   correlation properties and keys; processes are handed to `process`);
//! - `process`: walks a process and its embedded subprocesses, collecting elements and
//!   sequence flows; `links` then checks and joins what the walk found (flows, default
//!   flows, boundary events, start events);
//! - `element`: what every flow node has, and which family reads the rest: `events`,
//!   `tasks` (script and service tasks), `messages` (shared by message events and
//!   send/receive tasks), `subprocess`, `loops` (standard and multi-instance);
//! - `nodes`: namespace-aware XML helpers.
//!
//! References to other definitions (messageRef, errorRef, ...) stay ids here: they may
//! point into another file of the model, so `build_model` resolves them.
mod definitions;
mod element;
mod events;
mod links;
mod loops;
mod messages;
mod nodes;
mod process;
mod subprocess;
mod tasks;

use super::*;
use nodes::{is_bpmn, nonempty_attr, nonempty_text};
use roxmltree::Node;
use std::cell::RefCell;

pub fn parse_file(file_name: &str, xml: &str) -> Result<Definitions, ModelError> {
    let parser = Parser {
        file: file_name,
        faults: RefCell::new(vec![]),
    };
    // depth and size are checked before the walk below recurses into subprocesses
    let doc = super::limits::parse_xml(file_name, xml)?;
    let root = doc.root_element();
    if !is_bpmn(&root, "definitions") {
        let ns = root.tag_name().namespace().unwrap_or("no namespace");
        return Err(parser.err(
            None,
            format!(
                "not a BPMN file: the root element is {{{ns}}}{}, expected bpmn:definitions in namespace {BPMN_NS}",
                root.tag_name().name()
            ),
        ));
    }
    parser.definitions(root)
}

/// Reads one file; every error it makes names that file.
struct Parser<'f> {
    file: &'f str,
    /// What SpiffWorkflow's parser accepts and SpiffArena fails on only when the element
    /// runs: each element is kept as `ElementKind::Faulty`, and the model is warned.
    faults: RefCell<Vec<ModelError>>,
}

impl Parser<'_> {
    fn err(&self, id: Option<&str>, reason: impl Into<String>) -> ModelError {
        ModelError::new(self.file, id, reason)
    }

    /// An error of an element that makes it fail when it runs, not the model at load (see
    /// `element`).
    fn fault(&self, id: &str, reason: impl Into<String>) -> ModelError {
        let fault = self.err(Some(id), reason);
        self.faults.borrow_mut().push(fault.clone());
        fault
    }

    fn is_fault(&self, error: &ModelError) -> bool {
        self.faults.borrow().contains(error)
    }

    /// Compiles now so that a syntax error refuses the model at load, not at run time.
    fn expr(&self, id: &str, what: &str, source: &str) -> Result<Expression, ModelError> {
        Expression::compile(source)
            .map_err(|e| self.err(Some(id), format!("{what}: invalid Python expression: {e}")))
    }

    fn script(&self, id: &str, what: &str, source: &str) -> Result<Script, ModelError> {
        Script::compile(source)
            .map_err(|e| self.err(Some(id), format!("{what}: invalid Python script: {e}")))
    }

    /// A script in the text of `node`; a missing node or blank text is no script.
    fn opt_script(
        &self,
        id: &str,
        what: &str,
        node: Option<Node>,
    ) -> Result<Option<Script>, ModelError> {
        match node.and_then(nonempty_text) {
            Some(source) => Ok(Some(self.script(id, what, &source)?)),
            None => Ok(None),
        }
    }

    fn required_id(&self, node: Node) -> Result<String, ModelError> {
        nonempty_attr(node, "id").ok_or_else(|| {
            self.err(
                None,
                format!("a bpmn:{} has no id attribute", node.tag_name().name()),
            )
        })
    }
}
