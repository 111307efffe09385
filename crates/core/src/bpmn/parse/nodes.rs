//! Namespace-aware helpers over `roxmltree` nodes.
//!
//! Elements are matched by namespace URI, never by prefix: modelers write `bpmn:`,
//! `bpmn2:` or a default namespace for the same thing.
use crate::bpmn::{BPMN_NS, SPIFF_NS};
use roxmltree::Node;

pub(super) fn is_bpmn(node: &Node, name: &str) -> bool {
    node.is_element()
        && node.tag_name().namespace() == Some(BPMN_NS)
        && node.tag_name().name() == name
}

pub(super) fn is_spiff(node: &Node, name: &str) -> bool {
    node.is_element()
        && node.tag_name().namespace() == Some(SPIFF_NS)
        && node.tag_name().name() == name
}

pub(super) fn bpmn_children<'a, 'i>(node: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    node.children()
        .filter(|c| c.is_element() && c.tag_name().namespace() == Some(BPMN_NS))
}

pub(super) fn bpmn_child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|c| is_bpmn(c, name))
}

/// Direct `bpmn:extensionElements` children in the spiffworkflow namespace with this name.
pub(super) fn spiff_ext<'a, 'i>(
    node: Node<'a, 'i>,
    name: &'a str,
) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    node.children()
        .filter(|c| is_bpmn(c, "extensionElements"))
        .flat_map(move |e| e.children().filter(move |c| is_spiff(c, name)))
}

/// All text below a node (text and CDATA), not trimmed.
fn text_of(node: Node) -> String {
    node.descendants()
        .filter(|d| d.is_text())
        .filter_map(|d| d.text())
        .collect()
}

/// Trimmed text, None when empty.
pub(super) fn nonempty_text(node: Node) -> Option<String> {
    let text = text_of(node);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// Trimmed attribute value, None when absent or empty.
pub(super) fn nonempty_attr(node: Node, name: &str) -> Option<String> {
    node.attribute(name)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}
