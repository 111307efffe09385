use super::*;
use serde_json::json;

/// Wrap body in bpmn:definitions (prefixes bpmn / spiffworkflow).
pub(crate) fn defs(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="{BPMN_NS}" xmlns:spiffworkflow="{SPIFF_NS}"
  xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" id="Defs" targetNamespace="http://bpmn.io/schema/bpmn">
{body}
</bpmn:definitions>"#
    )
}

/// One process "P" with the given body, plus extra top-level definitions.
pub(crate) fn process(body: &str, extra: &str) -> String {
    defs(&format!(
        r#"<bpmn:process id="P" isExecutable="true">{body}</bpmn:process>{extra}"#
    ))
}

/// Evaluations in these tests read no clock.
fn cx() -> crate::expr::Context {
    crate::expr::Context::new(
        chrono::DateTime::UNIX_EPOCH,
        crate::test_support::script_host(),
    )
}

fn model(xml: &str) -> ModelSpec {
    build_model(&[("t.bpmn".to_string(), xml.to_string())], None)
        .unwrap_or_else(|e| panic!("model refused: {e}"))
}

fn refused(xml: &str) -> ModelError {
    match build_model(&[("t.bpmn".to_string(), xml.to_string())], None) {
        Ok(_) => panic!("model accepted"),
        Err(e) => e,
    }
}

const START_END: &str = r#"
  <bpmn:startEvent id="start"/>
  <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="end"/>
  <bpmn:endEvent id="end"/>"#;

#[test]
fn minimal_process_flows_come_from_sequence_flows() {
    let m = model(&process(START_END, ""));
    let p = &m.processes["P"];
    assert_eq!(m.primary_process_id, "P");
    assert_eq!(p.start_events, vec!["start"]);
    assert_eq!(p.elements["start"].outgoing, vec!["f1"]);
    assert_eq!(p.elements["end"].incoming, vec!["f1"]);
    assert_eq!(p.flows["f1"].target, "end");
    assert_eq!(p.file, "t.bpmn");
}

#[test]
fn namespaces_are_matched_by_uri_not_prefix() {
    let xml = format!(
        r#"<definitions xmlns="{BPMN_NS}" xmlns:sw="{SPIFF_NS}" id="D">
  <process id="P"><startEvent id="s"/><sequenceFlow id="f" sourceRef="s" targetRef="t"/>
    <scriptTask id="t"><extensionElements><sw:preScript>a = 1</sw:preScript></extensionElements>
      <script>b = 2</script></scriptTask></process></definitions>"#
    );
    let m = model(&xml);
    let t = &m.processes["P"].elements["t"];
    assert!(t.pre_script.is_some());
    assert!(
        matches!(&t.kind, ElementKind::ScriptTask { script: Some(s) } if s.source().trim() == "b = 2")
    );
    // elements in another namespace with BPMN local names are not BPMN
    let other = r#"<x:definitions xmlns:x="urn:other" id="D"/>"#;
    let e = refused(other);
    assert!(e.reason.contains("not a BPMN file"), "{e}");
}

/// Table: (name, process body, extra top-level definitions, check).
#[test]
fn parses_each_supported_element() {
    type Check = fn(&ModelSpec);
    let cases: Vec<(&str, &str, &str, Check)> = vec![
        (
            "message start event with messageVariable",
            r#"<bpmn:startEvent id="s"><bpmn:messageEventDefinition id="md" messageRef="m1">
                 <bpmn:extensionElements><spiffworkflow:messageVariable>msg</spiffworkflow:messageVariable></bpmn:extensionElements>
               </bpmn:messageEventDefinition></bpmn:startEvent>"#,
            r#"<bpmn:message id="m1" name="order placed"/>"#,
            |m| {
                let ElementKind::StartEvent { message: Some(c) } =
                    &m.processes["P"].elements["s"].kind
                else {
                    panic!()
                };
                assert_eq!(c.message_name, "order placed");
                assert_eq!(c.variable.as_deref(), Some("msg"));
                assert_eq!(
                    m.message_starts,
                    vec![MessageStart {
                        message_name: "order placed".into(),
                        process_id: "P".into(),
                        start_event_id: "s".into()
                    }]
                );
            },
        ),
        (
            "several start events",
            r#"<bpmn:startEvent id="s1"/><bpmn:startEvent id="s2"><bpmn:messageEventDefinition messageRef="m1"/></bpmn:startEvent>"#,
            r#"<bpmn:message id="m1" name="go"/>"#,
            |m| assert_eq!(m.processes["P"].start_events, vec!["s1", "s2"]),
        ),
        (
            "end events: none, terminate, error with errorRef",
            r#"<bpmn:startEvent id="s"/><bpmn:endEvent id="e1"/>
               <bpmn:endEvent id="e2"><bpmn:terminateEventDefinition/></bpmn:endEvent>
               <bpmn:endEvent id="e3"><bpmn:errorEventDefinition errorRef="err"/></bpmn:endEvent>"#,
            r#"<bpmn:error id="err" name="Bad" errorCode="E42"/>"#,
            |m| {
                let els = &m.processes["P"].elements;
                assert!(matches!(
                    els["e1"].kind,
                    ElementKind::EndEvent(EndKind::None)
                ));
                assert!(matches!(
                    els["e2"].kind,
                    ElementKind::EndEvent(EndKind::Terminate)
                ));
                let ElementKind::EndEvent(EndKind::Error(e)) = &els["e3"].kind else {
                    panic!()
                };
                assert_eq!(e.error_code.as_deref(), Some("E42"));
                assert_eq!(e.error_name.as_deref(), Some("Bad"));
            },
        ),
        (
            "exclusive gateway: conditions in document order, default",
            r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="g"/>
               <bpmn:exclusiveGateway id="g" default="fd"/>
               <bpmn:sequenceFlow id="fb" sourceRef="g" targetRef="b"><bpmn:conditionExpression>x > 1</bpmn:conditionExpression></bpmn:sequenceFlow>
               <bpmn:sequenceFlow id="fa" sourceRef="g" targetRef="a"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">x == 1</bpmn:conditionExpression></bpmn:sequenceFlow>
               <bpmn:sequenceFlow id="fd" sourceRef="g" targetRef="d"/>
               <bpmn:endEvent id="a"/><bpmn:endEvent id="b"/><bpmn:endEvent id="d"/>"#,
            "",
            |m| {
                let p = &m.processes["P"];
                assert_eq!(p.elements["g"].outgoing, vec!["fb", "fa", "fd"]);
                assert_eq!(p.elements["g"].default_flow.as_deref(), Some("fd"));
                assert_eq!(p.flows["fb"].condition.as_ref().unwrap().source(), "x > 1");
                assert!(p.flows["fd"].condition.is_none());
            },
        ),
        (
            "parallel gateway, task, user and manual task",
            r#"<bpmn:startEvent id="s"/><bpmn:parallelGateway id="g"/><bpmn:task id="t"/>
               <bpmn:userTask id="u"/><bpmn:manualTask id="mt"/>"#,
            "",
            |m| {
                let els = &m.processes["P"].elements;
                assert!(matches!(els["g"].kind, ElementKind::ParallelGateway));
                assert!(matches!(els["t"].kind, ElementKind::PassThrough));
                assert!(els["u"].is_human_task() && els["mt"].is_human_task());
                assert_eq!(els["u"].element_type, "userTask");
            },
        ),
        (
            "script task with pre and post scripts",
            r#"<bpmn:startEvent id="s"/><bpmn:scriptTask id="t" name="Compute">
                 <bpmn:extensionElements><spiffworkflow:preScript>a = 1</spiffworkflow:preScript>
                   <spiffworkflow:postScript>c = 3</spiffworkflow:postScript>
                   <spiffworkflow:unknownThing>ignored</spiffworkflow:unknownThing>
                   <spiffworkflow:properties><spiffworkflow:property name="x" value="y"/></spiffworkflow:properties>
                 </bpmn:extensionElements>
                 <bpmn:script><![CDATA[b = 2 if a < 3 else 0]]></bpmn:script></bpmn:scriptTask>"#,
            "",
            |m| {
                let t = &m.processes["P"].elements["t"];
                assert_eq!(t.name.as_deref(), Some("Compute"));
                assert_eq!(t.pre_script.as_ref().unwrap().source().trim(), "a = 1");
                assert_eq!(t.post_script.as_ref().unwrap().source().trim(), "c = 3");
                let ElementKind::ScriptTask { script: Some(s) } = &t.kind else {
                    panic!()
                };
                assert_eq!(s.source().trim(), "b = 2 if a < 3 else 0");
            },
        ),
        (
            "service task: operator, parameters, retry",
            r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="st"><bpmn:extensionElements>
                 <spiffworkflow:serviceTaskOperator id="http/GetRequest" resultVariable="resp">
                   <spiffworkflow:parameters>
                     <spiffworkflow:parameter id="url" type="str" value="&#34;https://x/&#34; + path" required="true"/>
                     <spiffworkflow:parameter id="headers" type="any"/>
                   </spiffworkflow:parameters>
                   <spiffworkflow:retry retries="3" backoff_base="1.5"/>
                 </spiffworkflow:serviceTaskOperator></bpmn:extensionElements></bpmn:serviceTask>
               <bpmn:serviceTask id="st2"><bpmn:extensionElements>
                 <spiffworkflow:serviceTaskOperator id="a/b"><spiffworkflow:retry retries="2"/></spiffworkflow:serviceTaskOperator>
               </bpmn:extensionElements></bpmn:serviceTask>"#,
            "",
            |m| {
                let els = &m.processes["P"].elements;
                let ElementKind::ServiceTask(s) = &els["st"].kind else {
                    panic!()
                };
                assert_eq!(s.operator_id, "http/GetRequest");
                assert_eq!(s.result_variable.as_deref(), Some("resp"));
                assert_eq!(s.parameters.len(), 2);
                assert_eq!(s.parameters[0].id, "url");
                assert_eq!(s.parameters[0].type_name.as_deref(), Some("str"));
                assert_eq!(
                    s.parameters[0].value.as_ref().unwrap().source(),
                    "\"https://x/\" + path"
                );
                assert!(s.parameters[0].required && !s.parameters[1].required);
                assert!(s.parameters[1].value.is_none());
                assert_eq!((s.retries, s.backoff_base), (3, 1.5));
                let ElementKind::ServiceTask(s2) = &els["st2"].kind else {
                    panic!()
                };
                assert_eq!(
                    (s2.retries, s2.backoff_base, s2.result_variable.clone()),
                    (2, 2.0, None)
                );
            },
        ),
        (
            "send task and message throw event with payloads",
            r#"<bpmn:startEvent id="s"/>
               <bpmn:sendTask id="send" messageRef="m1"><bpmn:extensionElements>
                 <spiffworkflow:messagePayload>{"id": order_id}</spiffworkflow:messagePayload></bpmn:extensionElements></bpmn:sendTask>
               <bpmn:intermediateThrowEvent id="throw"><bpmn:messageEventDefinition messageRef="m1"><bpmn:extensionElements>
                 <spiffworkflow:messagePayload>order</spiffworkflow:messagePayload></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:intermediateThrowEvent>
               <bpmn:intermediateThrowEvent id="none"/>
               <bpmn:sendTask id="whole" messageRef="m1"/>"#,
            r#"<bpmn:message id="m1" name="Order"/>"#,
            |m| {
                let els = &m.processes["P"].elements;
                let ElementKind::MessageThrow(a) = &els["send"].kind else {
                    panic!()
                };
                assert_eq!(
                    (
                        a.message_name.as_str(),
                        a.payload.as_ref().unwrap().source()
                    ),
                    ("Order", "{\"id\": order_id}")
                );
                let ElementKind::MessageThrow(b) = &els["throw"].kind else {
                    panic!()
                };
                assert_eq!(b.payload.as_ref().unwrap().source(), "order");
                assert!(matches!(els["none"].kind, ElementKind::PassThrough));
                let ElementKind::MessageThrow(c) = &els["whole"].kind else {
                    panic!()
                };
                assert!(c.payload.is_none());
            },
        ),
        (
            "receive task and catch event with messageVariable and processVariableCorrelation",
            r#"<bpmn:startEvent id="s"/>
               <bpmn:receiveTask id="r" messageRef="m1"><bpmn:extensionElements>
                 <spiffworkflow:messageVariable>got</spiffworkflow:messageVariable>
                 <spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>oid</spiffworkflow:propertyId>
                   <spiffworkflow:expression>order["id"]</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>
               </bpmn:extensionElements></bpmn:receiveTask>
               <bpmn:intermediateCatchEvent id="c"><bpmn:messageEventDefinition messageRef="m1"><bpmn:extensionElements>
                 <spiffworkflow:messageVariable>got2</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition>
               </bpmn:intermediateCatchEvent>"#,
            r#"<bpmn:message id="m1" name="Reply"/>"#,
            |m| {
                let els = &m.processes["P"].elements;
                let r = els["r"].message_catch().unwrap();
                assert_eq!(
                    (r.message_name.as_str(), r.variable.as_deref()),
                    ("Reply", Some("got"))
                );
                assert_eq!(r.process_correlations.len(), 1);
                assert_eq!(r.process_correlations[0].0, "oid");
                assert_eq!(r.process_correlations[0].1.source(), "order[\"id\"]");
                let c = els["c"].message_catch().unwrap();
                assert_eq!(c.variable.as_deref(), Some("got2"));
                assert_eq!(els["c"].element_type, "intermediateCatchEvent");
            },
        ),
        (
            "boundary events: error by code, catch-all, message, signal",
            r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/>
               <bpmn:boundaryEvent id="b1" attachedToRef="u"><bpmn:errorEventDefinition errorRef="err"/></bpmn:boundaryEvent>
               <bpmn:boundaryEvent id="b2" attachedToRef="u"><bpmn:errorEventDefinition>
                 <bpmn:extensionElements><spiffworkflow:variableName>oops</spiffworkflow:variableName></bpmn:extensionElements>
               </bpmn:errorEventDefinition></bpmn:boundaryEvent>
               <bpmn:boundaryEvent id="b3" attachedToRef="u" cancelActivity="true"><bpmn:messageEventDefinition messageRef="m1"/></bpmn:boundaryEvent>
               <bpmn:boundaryEvent id="b4" attachedToRef="u"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:boundaryEvent>"#,
            r#"<bpmn:error id="err" errorCode="E1"/><bpmn:message id="m1" name="Cancel"/><bpmn:signal id="sig" name="STOP"/>"#,
            |m| {
                let els = &m.processes["P"].elements;
                assert_eq!(els["u"].boundaries, vec!["b1", "b2", "b3", "b4"]);
                let trig = |id: &str| match &els[id].kind {
                    ElementKind::Boundary(b) => {
                        assert_eq!(b.attached_to, "u");
                        assert!(b.cancel_activity);
                        b.trigger.clone()
                    }
                    _ => panic!(),
                };
                assert!(
                    matches!(trig("b1"), BoundaryTrigger::Error(e) if e.error_code.as_deref() == Some("E1"))
                );
                assert!(
                    matches!(trig("b2"), BoundaryTrigger::Error(e) if e.error_code.is_none() && e.variable.as_deref() == Some("oops"))
                );
                assert!(
                    matches!(trig("b3"), BoundaryTrigger::Message(c) if c.message_name == "Cancel")
                );
                assert!(
                    matches!(trig("b4"), BoundaryTrigger::Signal(s) if s.signal_name == "STOP")
                );
            },
        ),
        (
            "embedded subprocess with its own start and end",
            r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="sub"/>
               <bpmn:subProcess id="sub"><bpmn:incoming>f1</bpmn:incoming><bpmn:startEvent id="ss"/><bpmn:sequenceFlow id="fi" sourceRef="ss" targetRef="se"/><bpmn:endEvent id="se"/></bpmn:subProcess>"#,
            "",
            |m| {
                let p = &m.processes["P"];
                assert_eq!(p.start_events, vec!["s"]);
                assert!(
                    matches!(&p.elements["sub"].kind, ElementKind::SubProcess { start_events, .. } if start_events == &vec!["ss".to_string()])
                );
                assert_eq!(p.elements["ss"].parent.as_deref(), Some("sub"));
                assert_eq!(p.elements["se"].incoming, vec!["fi"]);
            },
        ),
        (
            "ignored: diagram, annotations, associations, documentation, lanes, data objects",
            r#"<bpmn:documentation>doc</bpmn:documentation>
               <bpmn:laneSet id="ls"><bpmn:lane id="l1"><bpmn:flowNodeRef>s</bpmn:flowNodeRef></bpmn:lane></bpmn:laneSet>
               <bpmn:startEvent id="s"><bpmn:documentation>x</bpmn:documentation></bpmn:startEvent>
               <bpmn:dataObject id="do1"/><bpmn:dataObjectReference id="dor" dataObjectRef="do1"/>
               <bpmn:dataStoreReference id="dsr"/>
               <bpmn:textAnnotation id="ta"><bpmn:text>hi</bpmn:text></bpmn:textAnnotation>
               <bpmn:association id="as" sourceRef="s" targetRef="ta"/>"#,
            r#"<bpmndi:BPMNDiagram id="d"><bpmndi:BPMNPlane id="pl" bpmnElement="P"/></bpmndi:BPMNDiagram>
               <bpmn:collaboration id="c"><bpmn:participant id="pa" processRef="P"/><bpmn:participant id="pb"/>
                 <bpmn:messageFlow id="mf" sourceRef="pa" targetRef="pb"/></bpmn:collaboration>"#,
            |m| assert_eq!(m.processes["P"].elements.len(), 1),
        ),
        (
            "correlation properties with messagePath and formalExpression, keys",
            r#"<bpmn:startEvent id="s"/>"#,
            r#"<bpmn:message id="m1" name="A"/><bpmn:message id="m2" name="B"/>
               <bpmn:collaboration id="c"><bpmn:correlationKey name="k"><bpmn:correlationPropertyRef>p1</bpmn:correlationPropertyRef></bpmn:correlationKey></bpmn:collaboration>
               <bpmn:correlationProperty id="p1" name="Order id">
                 <bpmn:correlationPropertyRetrievalExpression messageRef="m1"><bpmn:messagePath>order_id</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
                 <bpmn:correlationPropertyRetrievalExpression messageRef="m2"><bpmn:formalExpression>order["id"]</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
               </bpmn:correlationProperty>"#,
            |m| {
                let p = &m.correlation_properties[0];
                assert_eq!((p.id.as_str(), p.name.as_str()), ("p1", "Order id"));
                assert_eq!(p.retrieval["A"].source(), "order_id");
                assert_eq!(p.retrieval["B"].source(), "order[\"id\"]");
                assert_eq!(
                    m.correlation_keys,
                    vec![CorrelationKeySpec {
                        name: "k".into(),
                        property_refs: vec!["p1".into()]
                    }]
                );
            },
        ),
        (
            "a task with no outgoing flow is fine",
            r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/><bpmn:task id="t"/>"#,
            "",
            |m| assert!(m.processes["P"].elements["t"].outgoing.is_empty()),
        ),
    ];
    for (name, body, extra, check) in cases {
        let xml = process(body, extra);
        let m = build_model(&[("t.bpmn".to_string(), xml)], None)
            .unwrap_or_else(|e| panic!("{name}: refused: {e}"));
        check(&m);
    }
}

/// Table: (name, xml, element id expected in the error, reason fragment).
#[test]
fn refuses_unrunnable_models_with_file_element_and_reason() {
    let p = |body: &str| process(body, "");
    let cases: Vec<(&str, String, Option<&str>, &str)> = vec![
        (
            "not well formed",
            "<bpmn:definitions".to_string(),
            None,
            "not well-formed XML",
        ),
        (
            "not BPMN",
            "<html><body/></html>".to_string(),
            None,
            "not a BPMN file",
        ),
        (
            "complex gateway",
            p(r#"<bpmn:startEvent id="s"/><bpmn:complexGateway id="cg"/>"#),
            Some("cg"),
            "complex gateways are not supported",
        ),
        (
            "event-based gateway",
            p(r#"<bpmn:startEvent id="s"/><bpmn:eventBasedGateway id="eg"/><bpmn:userTask id="u"/><bpmn:sequenceFlow id="f" sourceRef="eg" targetRef="u"/>"#),
            Some("eg"),
            "an event-based gateway leads only to message, timer or signal catch events or receive tasks; 'u' is a userTask",
        ),
        (
            "complex gateway",
            p(r#"<bpmn:startEvent id="s"/><bpmn:complexGateway id="cg"/>"#),
            Some("cg"),
            "complex gateways",
        ),
        (
            "business rule task without a decision",
            p(r#"<bpmn:startEvent id="s"/><bpmn:businessRuleTask id="br"/>"#),
            Some("br"),
            "needs spiffworkflow:calledDecisionId",
        ),
        (
            "timer catch event",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:intermediateCatchEvent id="tc"><bpmn:timerEventDefinition/></bpmn:intermediateCatchEvent>"#,
            ),
            Some("tc"),
            "a timer event needs a timeDate, timeDuration or timeCycle",
        ),
        (
            "timer start event",
            p(r#"<bpmn:startEvent id="s"><bpmn:timerEventDefinition/></bpmn:startEvent>"#),
            Some("s"),
            "a timer event needs a timeDate, timeDuration or timeCycle",
        ),
        (
            "timer boundary",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:boundaryEvent id="b" attachedToRef="u"><bpmn:timerEventDefinition/></bpmn:boundaryEvent>"#,
            ),
            Some("b"),
            "a timer event needs a timeDate, timeDuration or timeCycle",
        ),
        (
            "signal that is not defined",
            p(r#"<bpmn:startEvent id="s"><bpmn:signalEventDefinition signalRef="nope"/></bpmn:startEvent>"#),
            Some("s"),
            "signalRef 'nope' is not a bpmn:signal of this model",
        ),
        (
            "link without its catch",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:intermediateThrowEvent id="l"><bpmn:linkEventDefinition name="away"/></bpmn:intermediateThrowEvent>"#,
            ),
            Some("l"),
            "no link catch event named 'away' in this (sub)process",
        ),
        (
            "conditional event without a condition",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:intermediateCatchEvent id="c"><bpmn:conditionalEventDefinition/></bpmn:intermediateCatchEvent>"#,
            ),
            Some("c"),
            "a conditional event needs a bpmn:condition",
        ),
        (
            "compensation end",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:endEvent id="e"><bpmn:compensateEventDefinition/></bpmn:endEvent>"#,
            ),
            Some("e"),
            "compensation events are not supported",
        ),
        (
            "multi-instance without items",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"><bpmn:multiInstanceLoopCharacteristics/></bpmn:userTask>"#,
            ),
            Some("u"),
            "must specify a loopCardinality or a loopDataInputRef",
        ),
        (
            "event subprocess",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:subProcess id="es" triggeredByEvent="true"><bpmn:startEvent id="x"/></bpmn:subProcess>"#,
            ),
            Some("x"),
            "the start event of an event subprocess needs a trigger",
        ),
        (
            "non-interrupting error boundary",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:boundaryEvent id="b" attachedToRef="u" cancelActivity="false"><bpmn:errorEventDefinition/></bpmn:boundaryEvent>"#,
            ),
            Some("b"),
            "an error boundary event always interrupts",
        ),
        (
            "flow to nowhere",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="ghost"/>"#,
            ),
            Some("f"),
            "target 'ghost' does not exist",
        ),
        (
            "flow from nowhere",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="ghost" targetRef="s"/>"#,
            ),
            Some("f"),
            "source 'ghost' does not exist",
        ),
        (
            "flow across subprocess",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="in"/><bpmn:subProcess id="sub"><bpmn:startEvent id="ss"/><bpmn:task id="in"/></bpmn:subProcess>"#,
            ),
            Some("f"),
            "not in the same (sub)process",
        ),
        (
            "unknown attachedToRef",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:boundaryEvent id="b" attachedToRef="ghost"><bpmn:errorEventDefinition/></bpmn:boundaryEvent>"#,
            ),
            Some("b"),
            "attachedToRef 'ghost' does not exist",
        ),
        (
            "boundary on an event",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:boundaryEvent id="b" attachedToRef="s"><bpmn:errorEventDefinition/></bpmn:boundaryEvent>"#,
            ),
            Some("b"),
            "boundary events attach to tasks",
        ),
        (
            "unknown messageRef",
            p(r#"<bpmn:startEvent id="s"/><bpmn:receiveTask id="r" messageRef="ghost"/>"#),
            Some("r"),
            "messageRef 'ghost' is not a bpmn:message",
        ),
        (
            "unknown errorRef",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:endEvent id="e"><bpmn:errorEventDefinition errorRef="ghost"/></bpmn:endEvent>"#,
            ),
            Some("e"),
            "errorRef 'ghost' is not a bpmn:error",
        ),
        (
            "unknown signalRef",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"/><bpmn:boundaryEvent id="b" attachedToRef="u"><bpmn:signalEventDefinition signalRef="ghost"/></bpmn:boundaryEvent>"#,
            ),
            Some("b"),
            "signalRef 'ghost'",
        ),
        (
            "unknown messageRef in retrieval",
            process(
                r#"<bpmn:startEvent id="s"/>"#,
                r#"<bpmn:correlationProperty id="cp"><bpmn:correlationPropertyRetrievalExpression messageRef="ghost"><bpmn:formalExpression>a</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression></bpmn:correlationProperty>"#,
            ),
            Some("cp"),
            "messageRef 'ghost'",
        ),
        (
            "bad default flow",
            p(r#"<bpmn:startEvent id="s"/><bpmn:exclusiveGateway id="g" default="nope"/>"#),
            Some("g"),
            "default flow 'nope'",
        ),
        (
            "no start event",
            p(r#"<bpmn:task id="t"/>"#),
            Some("P"),
            "no start event",
        ),
        (
            "subprocess without start",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:subProcess id="sub"><bpmn:task id="t"/></bpmn:subProcess>"#,
            ),
            Some("sub"),
            "no start event",
        ),
        (
            "duplicate id",
            p(r#"<bpmn:startEvent id="s"/><bpmn:task id="s"/>"#),
            Some("s"),
            "duplicate element id",
        ),
        (
            "service task without operator",
            p(r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="st"/>"#),
            Some("st"),
            "serviceTaskOperator",
        ),
        (
            "bad retries",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="st"><bpmn:extensionElements><spiffworkflow:serviceTaskOperator id="a/b"><spiffworkflow:retry retries="many"/></spiffworkflow:serviceTaskOperator></bpmn:extensionElements></bpmn:serviceTask>"#,
            ),
            Some("st"),
            "retries=\"many\"",
        ),
        (
            "catch event without definition",
            p(r#"<bpmn:startEvent id="s"/><bpmn:intermediateCatchEvent id="c"/>"#),
            Some("c"),
            "needs an event definition",
        ),
    ];
    for (name, xml, element, reason) in cases {
        let e = match build_model(&[("bad.bpmn".to_string(), xml)], None) {
            Ok(_) => panic!("{name}: accepted"),
            Err(e) => e,
        };
        assert_eq!(e.file, "bad.bpmn", "{name}");
        assert_eq!(e.element_id.as_deref(), element, "{name}: {e}");
        assert!(e.reason.contains(reason), "{name}: {e}");
        let shown = e.to_string();
        assert!(shown.starts_with("bad.bpmn: "), "{name}: {shown}");
        if let Some(id) = element {
            assert!(
                shown.contains(&format!("element {id}: ")),
                "{name}: {shown}"
            );
        }
    }
}

#[test]
fn parse_file_alone_keeps_references_unresolved() {
    let xml = process(
        r#"<bpmn:startEvent id="s"/><bpmn:receiveTask id="r" messageRef="m"/>"#,
        r#"<bpmn:message id="m" name="Mname"/>"#,
    );
    let d = parse_file("a.bpmn", &xml).unwrap();
    assert_eq!(
        d.messages,
        vec![MessageSpec {
            id: "m".into(),
            name: "Mname".into()
        }]
    );
    assert_eq!(
        d.processes[0].elements["r"]
            .message_catch()
            .unwrap()
            .message_ref,
        "m"
    );
}

#[test]
fn build_model_merges_files_and_picks_the_primary_process() {
    let receiver = defs(
        r#"<bpmn:message id="m_req" name="request"/>
        <bpmn:process id="Receiver"><bpmn:startEvent id="rs"><bpmn:messageEventDefinition messageRef="m_req"/></bpmn:startEvent></bpmn:process>"#,
    );
    // the sender uses a message defined only in the other file
    let sender = defs(
        r#"<bpmn:process id="Sender"><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="send"/>
           <bpmn:sendTask id="send" messageRef="m_req"/></bpmn:process>
           <bpmn:process id="Empty"/>"#,
    );
    let files = vec![
        ("b_sender.bpmn".to_string(), sender),
        ("a_receiver.bpmn".to_string(), receiver),
    ];
    let m = build_model(&files, None).unwrap();
    assert_eq!(m.files, vec!["a_receiver.bpmn", "b_sender.bpmn"]);
    // first process (by file name) with a none start event
    assert_eq!(m.primary_process_id, "Sender");
    assert!(!m.processes.contains_key("Empty"));
    assert_eq!(m.processes["Receiver"].file, "a_receiver.bpmn");
    let ElementKind::MessageThrow(t) = &m.processes["Sender"].elements["send"].kind else {
        panic!()
    };
    assert_eq!(t.message_name, "request");
    assert_eq!(m.message_start("request").unwrap().process_id, "Receiver");

    let m = build_model(&files, Some("Receiver")).unwrap();
    assert_eq!(m.primary_process_id, "Receiver");
    let e = build_model(&files, Some("Nope")).unwrap_err();
    assert!(e.reason.contains("primary process 'Nope'"), "{e}");

    // same process id twice
    let dup = vec![
        ("a.bpmn".to_string(), process(START_END, "")),
        ("b.bpmn".to_string(), process(START_END, "")),
    ];
    let e = build_model(&dup, None).unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.element_id.as_deref()),
        ("b.bpmn", Some("P"))
    );
    // same message id, different names
    let a = process(START_END, r#"<bpmn:message id="m" name="one"/>"#);
    let b = defs(r#"<bpmn:message id="m" name="two"/>"#);
    let e = build_model(&[("a.bpmn".into(), a), ("b.bpmn".into(), b)], None).unwrap_err();
    assert!(e.reason.contains("named 'two' here and 'one'"), "{e}");
    // two start events for one message name
    let two = process(
        r#"<bpmn:startEvent id="s1"><bpmn:messageEventDefinition messageRef="m"/></bpmn:startEvent>
           <bpmn:startEvent id="s2"><bpmn:messageEventDefinition messageRef="m2"/></bpmn:startEvent>"#,
        r#"<bpmn:message id="m" name="go"/><bpmn:message id="m2" name="go"/>"#,
    );
    let e = refused(&two);
    assert_eq!(e.element_id.as_deref(), Some("s2"));
    assert!(build_model(&[], None).is_err());
}

fn correlation_model() -> ModelSpec {
    model(&process(
        r#"<bpmn:startEvent id="s"><bpmn:messageEventDefinition messageRef="m1"/></bpmn:startEvent>
           <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="r"/>
           <bpmn:receiveTask id="r" messageRef="m2"/>
           <bpmn:sequenceFlow id="f2" sourceRef="r" targetRef="st"/>
           <bpmn:serviceTask id="st"><bpmn:extensionElements><spiffworkflow:serviceTaskOperator id="http/GetRequest"/></bpmn:extensionElements></bpmn:serviceTask>
           <bpmn:sendTask id="send" messageRef="m3"/>"#,
        r#"<bpmn:message id="m1" name="start me"/><bpmn:message id="m2" name="reply"/><bpmn:message id="m3" name="notify"/>
           <bpmn:correlationProperty id="order_id" name="Order">
             <bpmn:correlationPropertyRetrievalExpression messageRef="m1"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
             <bpmn:correlationPropertyRetrievalExpression messageRef="m2"><bpmn:formalExpression>order["id"]</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
           </bpmn:correlationProperty>
           <bpmn:correlationProperty id="customer">
             <bpmn:correlationPropertyRetrievalExpression messageRef="m1"><bpmn:messagePath>customer</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
           </bpmn:correlationProperty>"#,
    ))
}

#[test]
fn correlation_values_evaluate_retrieval_expressions_on_the_payload() {
    let m = correlation_model();
    let v = m.correlation_values(
        "start me",
        &json!({"order_id": 7, "customer": "acme", "x": 1}),
        &cx(),
    );
    assert_eq!(
        v,
        [
            ("customer".to_string(), json!("acme")),
            ("order_id".to_string(), json!(7))
        ]
        .into()
    );
    // missing key: that property is left out
    let v = m.correlation_values("start me", &json!({"order_id": 7}), &cx());
    assert_eq!(v, [("order_id".to_string(), json!(7))].into());
    // null is not a value
    assert!(m
        .correlation_values("start me", &json!({"order_id": null}), &cx())
        .is_empty());
    // non-object payload, unknown message
    assert!(m
        .correlation_values("start me", &json!([1]), &cx())
        .is_empty());
    assert!(m
        .correlation_values("other", &json!({"order_id": 1}), &cx())
        .is_empty());
    // subscripts (real Python semantics)
    let v = m.correlation_values("reply", &json!({"order": {"id": "A-1"}}), &cx());
    assert_eq!(v, [("order_id".to_string(), json!("A-1"))].into());
    assert_eq!(
        m.correlation_properties_for("start me"),
        vec!["order_id", "customer"]
    );
}

#[test]
fn summary_lists_processes_start_events_messages_and_operators() {
    let m = correlation_model();
    let s = m.summary();
    assert_eq!(s["primary_process_id"], "P");
    assert_eq!(s["start_messages"], json!(["start me"]));
    assert_eq!(s["waits_for_messages"], json!(["reply"]));
    assert_eq!(s["sends_messages"], json!(["notify"]));
    assert_eq!(s["service_operators"], json!(["http/GetRequest"]));
    assert_eq!(
        s["processes"][0]["start_events"],
        json!([{"id": "s", "name": null, "kind": "message", "message_name": "start me", "signal_name": null}])
    );
    assert_eq!(s["processes"][0]["is_primary"], true);
    assert_eq!(
        s["correlation_properties"][0]["messages"],
        json!(["reply", "start me"])
    );
}

/// Python syntax is CPython's to judge: the model loads, and its Python sources, checked by
/// the script host (as an upload does), name the element, what the source is for, and where
/// the error is.
#[test]
fn syntax_errors_are_found_in_the_python_sources_by_the_host() {
    let p = |body: &str| process(body, "");
    let cases = [
        (
            "syntax error in condition",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"><bpmn:conditionExpression>x ==</bpmn:conditionExpression></bpmn:sequenceFlow><bpmn:endEvent id="e"/>"#,
            ),
            "f",
            "condition: SyntaxError",
        ),
        (
            "syntax error in script",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:scriptTask id="t"><bpmn:script>a = = 1</bpmn:script></bpmn:scriptTask>"#,
            ),
            "t",
            "script: SyntaxError",
        ),
        (
            "syntax error in preScript",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:userTask id="u"><bpmn:extensionElements><spiffworkflow:preScript>if</spiffworkflow:preScript></bpmn:extensionElements></bpmn:userTask>"#,
            ),
            "u",
            "preScript: SyntaxError",
        ),
        (
            "syntax error in payload",
            process(
                r#"<bpmn:startEvent id="s"/><bpmn:sendTask id="t" messageRef="m"><bpmn:extensionElements><spiffworkflow:messagePayload>{"a": </spiffworkflow:messagePayload></bpmn:extensionElements></bpmn:sendTask>"#,
                r#"<bpmn:message id="m" name="m"/>"#,
            ),
            "t",
            "messagePayload: SyntaxError",
        ),
        (
            "syntax error in parameter",
            p(
                r#"<bpmn:startEvent id="s"/><bpmn:serviceTask id="st"><bpmn:extensionElements><spiffworkflow:serviceTaskOperator id="a/b"><spiffworkflow:parameters><spiffworkflow:parameter id="url" value="'x"/></spiffworkflow:parameters></spiffworkflow:serviceTaskOperator></bpmn:extensionElements></bpmn:serviceTask>"#,
            ),
            "st",
            "parameter 'url': SyntaxError",
        ),
        (
            "syntax error in retrieval",
            process(
                r#"<bpmn:startEvent id="s"/>"#,
                r#"<bpmn:message id="m" name="m"/><bpmn:correlationProperty id="cp"><bpmn:correlationPropertyRetrievalExpression messageRef="m"><bpmn:formalExpression>a[</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression></bpmn:correlationProperty>"#,
            ),
            "cp",
            "retrieval expression for message 'm': SyntaxError",
        ),
    ];
    let host = crate::test_support::script_host();
    for (name, xml, element, reason) in cases {
        let model = build_model(&[("bad.bpmn".to_string(), xml)], None)
            .unwrap_or_else(|e| panic!("{name}: refused at load: {e}"));
        assert!(model.needs_python, "{name}");
        let refused: Vec<String> = model
            .python_sources()
            .iter()
            .filter(|s| s.needs_python)
            .filter_map(|s| {
                let error = host.check(s.source, s.is_script).err()?;
                Some(format!("{}|{}: {}", s.element_id, s.what, error.message))
            })
            .collect();
        assert_eq!(refused.len(), 1, "{name}: {refused:?}");
        let (id, message) = refused[0].split_once('|').unwrap();
        assert_eq!(id, element, "{name}");
        assert!(message.starts_with(reason), "{name}: {message}");
        assert!(message.contains("(line 1, column "), "{name}: {message}");
    }
}

/// Short steps (run where asked, without a thread hop): a small model with no Python, loop or
/// call elsewhere. Any of those, or many elements, and its steps leave the async threads.
#[test]
fn only_small_plain_models_count_as_having_short_steps() {
    assert!(model(&process(START_END, "")).steps_are_short());
    let script = r#"<bpmn:startEvent id="start"/>
      <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="s"/>
      <bpmn:scriptTask id="s"><bpmn:script>x = 1 + 1</bpmn:script></bpmn:scriptTask>
      <bpmn:sequenceFlow id="f2" sourceRef="s" targetRef="end"/><bpmn:endEvent id="end"/>"#;
    assert!(!model(&process(script, "")).steps_are_short());
    let looped = r#"<bpmn:startEvent id="start"/>
      <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="t"/>
      <bpmn:manualTask id="t"><bpmn:multiInstanceLoopCharacteristics isSequential="true">
        <bpmn:loopCardinality>100000</bpmn:loopCardinality></bpmn:multiInstanceLoopCharacteristics>
      </bpmn:manualTask>
      <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="end"/><bpmn:endEvent id="end"/>"#;
    assert!(!model(&process(looped, "")).steps_are_short());
    let mut chain = String::from(r#"<bpmn:startEvent id="start"/>"#);
    let mut previous = "start".to_string();
    for i in 0..200 {
        chain.push_str(&format!(
            r#"<bpmn:sequenceFlow id="f{i}" sourceRef="{previous}" targetRef="t{i}"/><bpmn:task id="t{i}"/>"#
        ));
        previous = format!("t{i}");
    }
    chain.push_str(&format!(
        r#"<bpmn:sequenceFlow id="last" sourceRef="{previous}" targetRef="end"/><bpmn:endEvent id="end"/>"#
    ));
    assert!(!model(&process(&chain, "")).steps_are_short());
}
