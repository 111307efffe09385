//! How large and how deep a model may be. Files are read with these limits checked before
//! anything walks their elements, so that a hostile upload is refused with a reason instead
//! of exhausting the stack (the walks recurse into subprocesses) or the memory; the limits
//! are far above what real models use (docs/bpmn.md, "What the service accepts").
use super::ModelError;
use roxmltree::{Document, ParsingOptions};

/// How deep the elements of one file may nest (the root element is level 1), and how deep
/// subprocesses may nest in a built model, embedded ones and the processes call activities
/// copy in counted together.
pub const MAX_NESTING_DEPTH: usize = 64;

/// How many call activities deep a process may call itself (directly or through others):
/// recursive calls are copied in as an instance reaches them, and one deeper than this errs
/// the instance at that call activity instead.
pub const MAX_CALL_DEPTH: usize = 16;

/// How many XML elements one file may hold, and how many flow elements a process may have
/// once call activities have copied their processes in.
pub const MAX_ELEMENTS_PER_FILE: usize = 100_000;

/// XML nodes roxmltree may build while parsing (elements, texts, comments): a bound on the
/// memory a file takes before its elements are counted.
const MAX_NODES_PER_FILE: u32 = 4 * MAX_ELEMENTS_PER_FILE as u32;

/// Parses `xml` (BPMN or DMN): well-formed, at most `MAX_NODES_PER_FILE` nodes,
/// `MAX_ELEMENTS_PER_FILE` elements, nested at most `MAX_NESTING_DEPTH` deep. roxmltree
/// itself parses without recursion (0.21 tracks depth in a loop); the checks walk the tree
/// without recursion too.
pub(crate) fn parse_xml<'x>(file: &str, xml: &'x str) -> Result<Document<'x>, ModelError> {
    let options = ParsingOptions {
        nodes_limit: MAX_NODES_PER_FILE,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(xml, options).map_err(|e| match e {
        roxmltree::Error::NodesLimitReached => ModelError::new(
            file,
            None,
            format!(
                "the file is too large: more than {MAX_NODES_PER_FILE} XML nodes (a file holds at most {MAX_ELEMENTS_PER_FILE} elements)"
            ),
        ),
        e => ModelError::new(file, None, format!("the file is not well-formed XML: {e}")),
    })?;
    check_shape(file, &doc)?;
    Ok(doc)
}

/// Counts the elements and their depth in one pass over the tree, in document order: a
/// parent comes before its children, and node ids are positions in that order.
fn check_shape(file: &str, doc: &Document) -> Result<(), ModelError> {
    // depth of each element by node id (the document node and other nodes: 0)
    let mut depths: Vec<usize> = vec![];
    let mut elements = 0usize;
    for node in doc.root().descendants().filter(|n| n.is_element()) {
        let parent_depth = node
            .parent()
            .and_then(|parent| depths.get(parent.id().get_usize()).copied())
            .unwrap_or(0);
        let depth = parent_depth + 1;
        elements += 1;
        if depth > MAX_NESTING_DEPTH {
            return Err(ModelError::new(
                file,
                node.attribute("id"),
                format!(
                    "elements nest more than {MAX_NESTING_DEPTH} levels deep (the limit; each subprocess inside another adds a level)"
                ),
            ));
        }
        if elements > MAX_ELEMENTS_PER_FILE {
            return Err(ModelError::new(
                file,
                None,
                format!(
                    "the file holds more than {MAX_ELEMENTS_PER_FILE} XML elements (the limit per file)"
                ),
            ));
        }
        let at = node.id().get_usize();
        if depths.len() <= at {
            depths.resize(at + 1, 0);
        }
        depths[at] = depth;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}{}", "<a>".repeat(depth), "</a>".repeat(depth))
    }

    #[test]
    fn a_file_nested_to_the_limit_is_read_and_one_level_more_is_refused() {
        assert!(parse_xml("f", &nested(MAX_NESTING_DEPTH)).is_ok());
        let refused = parse_xml("f", &nested(MAX_NESTING_DEPTH + 1)).unwrap_err();
        assert!(refused.reason.contains("nest more than 64"), "{refused}");
        // far beyond: refused the same way, on a small stack
        let deep = nested(100_000);
        let refused = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || parse_xml("f", &deep).map(|_| ()))
            .unwrap()
            .join()
            .unwrap();
        assert!(refused.is_err());
    }

    #[test]
    fn a_file_with_elements_to_the_limit_is_read_and_one_more_is_refused() {
        let wide = |n: usize| format!("<a>{}</a>", "<b/>".repeat(n - 1));
        assert!(parse_xml("f", &wide(MAX_ELEMENTS_PER_FILE)).is_ok());
        let refused = parse_xml("f", &wide(MAX_ELEMENTS_PER_FILE + 1)).unwrap_err();
        assert!(
            refused.reason.contains("more than 100000 XML elements"),
            "{refused}"
        );
        // texts and comments count toward the node bound
        let noisy = format!("<a>{}</a>", "x<!---->".repeat(MAX_ELEMENTS_PER_FILE * 2));
        let refused = parse_xml("f", &noisy).unwrap_err();
        assert!(refused.reason.contains("too large"), "{refused}");
    }
}

#[cfg(test)]
pub(crate) mod model_tests {
    use super::*;
    use crate::bpmn::tests::defs;
    use crate::bpmn::{build_model, ModelSpec};

    /// Process `id`: `levels` embedded subprocesses one inside the other; the innermost runs
    /// start -> `inner` (an element with id `c`) -> end.
    pub(crate) fn nested_process(id: &str, levels: usize, inner: &str) -> String {
        let (mut open, mut close) = (String::new(), String::new());
        for i in 1..=levels {
            open.push_str(&format!(
                r#"<bpmn:startEvent id="a{i}"/><bpmn:sequenceFlow id="f{i}" sourceRef="a{i}" targetRef="s{i}"/><bpmn:subProcess id="s{i}">"#
            ));
            close.insert_str(0, &format!(r#"</bpmn:subProcess><bpmn:sequenceFlow id="g{i}" sourceRef="s{i}" targetRef="e{i}"/><bpmn:endEvent id="e{i}"/>"#));
        }
        format!(
            r#"<bpmn:process id="{id}" isExecutable="true">{open}<bpmn:startEvent id="x"/><bpmn:sequenceFlow id="fx" sourceRef="x" targetRef="c"/>{inner}<bpmn:sequenceFlow id="fy" sourceRef="c" targetRef="y"/><bpmn:endEvent id="y"/>{close}</bpmn:process>"#
        )
    }

    /// `processes` processes P0, P1, ... each nested `levels` deep, each calling the next
    /// from its innermost subprocess; the last runs a task there.
    pub(crate) fn call_chain(processes: usize, levels: usize) -> Result<ModelSpec, ModelError> {
        call_chain_to(processes, levels, r#"<bpmn:task id="c"/>"#)
    }

    /// As `call_chain`, the last process running `innermost` (an element with id `c`).
    pub(crate) fn call_chain_to(
        processes: usize,
        levels: usize,
        innermost: &str,
    ) -> Result<ModelSpec, ModelError> {
        let body: String = (0..processes)
            .map(|i| {
                let inner = if i + 1 < processes {
                    format!(r#"<bpmn:callActivity id="c" calledElement="P{}"/>"#, i + 1)
                } else {
                    innermost.to_string()
                };
                nested_process(&format!("P{i}"), levels, &inner)
            })
            .collect();
        build_model(&[("t.bpmn".into(), defs(&body))], Some("P0"))
    }

    #[test]
    fn subprocesses_nest_to_the_limit_through_call_activities_and_no_deeper() {
        // the innermost task of 3 processes of 20 levels: 3 * 20 + 2 calls = 62 deep
        let model = call_chain(3, 20).expect("62 levels load");
        assert!(model.processes["P0"].elements.contains_key("c/c/c"));
        // 4 processes: 83 deep, though every file nests only 24 elements deep
        let refused = call_chain(4, 20).unwrap_err();
        assert!(
            refused
                .reason
                .contains("subprocesses nest more than 64 deep"),
            "{refused}"
        );
    }

    #[test]
    fn call_activities_cannot_multiply_a_process_past_the_element_limit() {
        // each process calls the next twice: 2^16 copies of the last one's 12 elements
        let body: String = (0..=16)
            .map(|i| {
                let flow = if i < 16 {
                    let next = i + 1;
                    format!(
                        r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="c1"/><bpmn:callActivity id="c1" calledElement="P{next}"/><bpmn:sequenceFlow id="f2" sourceRef="c1" targetRef="c2"/><bpmn:callActivity id="c2" calledElement="P{next}"/><bpmn:sequenceFlow id="f3" sourceRef="c2" targetRef="e"/><bpmn:endEvent id="e"/>"#
                    )
                } else {
                    let tasks: String = (1..=10)
                        .map(|t| format!(r#"<bpmn:task id="t{t}"/><bpmn:sequenceFlow id="f{t}" sourceRef="t{t}" targetRef="t{}"/>"#, t + 1))
                        .collect();
                    format!(
                        r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="t1"/>{tasks}<bpmn:endEvent id="t11"/>"#
                    )
                };
                format!(r#"<bpmn:process id="P{i}" isExecutable="true">{flow}</bpmn:process>"#)
            })
            .collect();
        let refused = build_model(&[("t.bpmn".into(), defs(&body))], Some("P0")).unwrap_err();
        assert!(
            refused
                .reason
                .contains("would have more than 100000 elements"),
            "{refused}"
        );
    }
}
