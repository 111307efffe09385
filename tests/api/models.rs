//! BPMN models written for these tests (SpiffArena's dialect), and helpers to upload them.

pub const HEADER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:spiffworkflow="http://spiffworkflow.org/bpmn/schema/1.0/core" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">"#;

/// Wraps elements in `bpmn:definitions`.
pub fn definitions(body: &str) -> String {
    format!("{HEADER}\n{body}\n</bpmn:definitions>\n")
}

/// Message start `{placed}` (payload -> `order`), then waits for `{paid}` (payload ->
/// `payment`) correlated by `order_id`, then ends.
pub fn order_process(process_id: &str, placed: &str, paid: &str) -> String {
    definitions(&format!(
        r#"<bpmn:collaboration id="c_{process_id}"><bpmn:participant id="p_{process_id}" processRef="{process_id}" />
    <bpmn:correlationKey name="order"><bpmn:correlationPropertyRef>order_id</bpmn:correlationPropertyRef></bpmn:correlationKey>
  </bpmn:collaboration>
  <bpmn:correlationProperty id="order_id" name="order id">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_placed"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_paid"><bpmn:messagePath>order_id</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_placed" name="{placed}" />
  <bpmn:message id="m_paid" name="{paid}" />
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="placed"><bpmn:messageEventDefinition id="e1" messageRef="m_placed"><bpmn:extensionElements><spiffworkflow:messageVariable>order</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="placed" targetRef="paid" />
    <bpmn:intermediateCatchEvent id="paid"><bpmn:messageEventDefinition id="e2" messageRef="m_paid"><bpmn:extensionElements><spiffworkflow:messageVariable>payment</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="paid" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// Started through the API with `{"key": ...}`; waits for `{name}` whose payload's `key`
/// equals the instance's (processVariableCorrelation), stores it in `received`, ends.
pub fn keyed_waiter(process_id: &str, name: &str) -> String {
    definitions(&format!(
        r#"<bpmn:correlationProperty id="key" name="key">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_{process_id}"><bpmn:formalExpression>key</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_{process_id}" name="{name}" />
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait">
      <bpmn:messageEventDefinition id="e1" messageRef="m_{process_id}">
        <bpmn:extensionElements>
          <spiffworkflow:messageVariable>received</spiffworkflow:messageVariable>
          <spiffworkflow:processVariableCorrelation><spiffworkflow:propertyId>key</spiffworkflow:propertyId><spiffworkflow:expression>key</spiffworkflow:expression></spiffworkflow:processVariableCorrelation>
        </bpmn:extensionElements>
      </bpmn:messageEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// Message start `{name}` -> end: the one-step process of the benchmark.
pub fn one_step(process_id: &str, name: &str) -> String {
    definitions(&format!(
        r#"<bpmn:message id="m_{process_id}" name="{name}" />
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:messageEventDefinition id="e1" messageRef="m_{process_id}"><bpmn:extensionElements><spiffworkflow:messageVariable>payload</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// start -> user task `approve` -> script `total = amount * 2` -> end.
pub fn user_task_process(process_id: &str) -> String {
    definitions(&format!(
        r#"<bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approve" />
    <bpmn:userTask id="approve" name="Approve" />
    <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="double" />
    <bpmn:scriptTask id="double" name="Double"><bpmn:script>total = amount * 2</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f3" sourceRef="double" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// Two processes in one model, conversing with a two-property correlation key
/// (customer_id, po_number), as the reference's `message_send_one_conversation` does:
/// `buyer` (started through the API with both values) waits at a user task, then sends
/// `{request}` and waits for `{reply}`; `seller` starts on `{request}` and sends `{reply}`
/// with the same values.
pub fn conversation(request: &str, reply: &str) -> String {
    definitions(&format!(
        r#"<bpmn:collaboration id="conv"><bpmn:participant id="p_buyer" processRef="buyer" /><bpmn:participant id="p_seller" processRef="seller" />
    <bpmn:correlationKey name="invoice"><bpmn:correlationPropertyRef>customer_id</bpmn:correlationPropertyRef><bpmn:correlationPropertyRef>po_number</bpmn:correlationPropertyRef></bpmn:correlationKey>
  </bpmn:collaboration>
  <bpmn:correlationProperty id="customer_id" name="Customer">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_request"><bpmn:messagePath>customer_id</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_reply"><bpmn:messagePath>customer_id</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:correlationProperty id="po_number" name="PO">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_request"><bpmn:messagePath>po_number</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_reply"><bpmn:messagePath>po_number</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_request" name="{request}" />
  <bpmn:message id="m_reply" name="{reply}" />
  <bpmn:process id="buyer" isExecutable="true">
    <bpmn:startEvent id="buyer_start" />
    <bpmn:sequenceFlow id="b1" sourceRef="buyer_start" targetRef="prepare" />
    <bpmn:userTask id="prepare" name="Prepare invoice" />
    <bpmn:sequenceFlow id="b2" sourceRef="prepare" targetRef="send_request" />
    <bpmn:sendTask id="send_request" messageRef="m_request">
      <bpmn:extensionElements><spiffworkflow:messagePayload>{{"customer_id": customer_id, "po_number": po_number, "amount": amount}}</spiffworkflow:messagePayload></bpmn:extensionElements>
    </bpmn:sendTask>
    <bpmn:sequenceFlow id="b3" sourceRef="send_request" targetRef="await_reply" />
    <bpmn:intermediateCatchEvent id="await_reply"><bpmn:messageEventDefinition id="be" messageRef="m_reply"><bpmn:extensionElements><spiffworkflow:messageVariable>reply</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="b4" sourceRef="await_reply" targetRef="buyer_end" />
    <bpmn:endEvent id="buyer_end" />
  </bpmn:process>
  <bpmn:process id="seller" isExecutable="true">
    <bpmn:startEvent id="seller_start"><bpmn:messageEventDefinition id="se" messageRef="m_request"><bpmn:extensionElements><spiffworkflow:messageVariable>invoice</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
    <bpmn:sequenceFlow id="s1" sourceRef="seller_start" targetRef="send_reply" />
    <bpmn:sendTask id="send_reply" messageRef="m_reply">
      <bpmn:extensionElements><spiffworkflow:messagePayload>{{"customer_id": invoice["customer_id"], "po_number": invoice["po_number"], "approved": invoice["amount"] &lt; 1000}}</spiffworkflow:messagePayload></bpmn:extensionElements>
    </bpmn:sendTask>
    <bpmn:sequenceFlow id="s2" sourceRef="send_reply" targetRef="seller_end" />
    <bpmn:endEvent id="seller_end" />
  </bpmn:process>"#
    ))
}

/// A buyer that, once answered, closes the conversation; the seller (started by the request)
/// waits for that close after it answers. Correlated by `po_number`.
pub fn closing_conversation() -> String {
    let retrieval = |message: &str| {
        format!(
            r#"<bpmn:correlationPropertyRetrievalExpression messageRef="{message}"><bpmn:messagePath>po_number</bpmn:messagePath></bpmn:correlationPropertyRetrievalExpression>"#
        )
    };
    definitions(&format!(
        r#"<bpmn:collaboration id="conv"><bpmn:participant id="p_buyer" processRef="buyer" /><bpmn:participant id="p_seller" processRef="seller" />
    <bpmn:correlationKey name="order"><bpmn:correlationPropertyRef>po_number</bpmn:correlationPropertyRef></bpmn:correlationKey>
  </bpmn:collaboration>
  <bpmn:correlationProperty id="po_number" name="PO">{}{}{}</bpmn:correlationProperty>
  <bpmn:message id="m_request" name="request" />
  <bpmn:message id="m_reply" name="reply" />
  <bpmn:message id="m_close" name="close" />
  <bpmn:process id="buyer" isExecutable="true">
    <bpmn:startEvent id="buyer_start" />
    <bpmn:sequenceFlow id="b1" sourceRef="buyer_start" targetRef="prepare" />
    <bpmn:userTask id="prepare" name="Prepare" />
    <bpmn:sequenceFlow id="b2" sourceRef="prepare" targetRef="send_request" />
    <bpmn:sendTask id="send_request" messageRef="m_request">
      <bpmn:extensionElements><spiffworkflow:messagePayload>{{"po_number": po_number}}</spiffworkflow:messagePayload></bpmn:extensionElements>
    </bpmn:sendTask>
    <bpmn:sequenceFlow id="b3" sourceRef="send_request" targetRef="await_reply" />
    <bpmn:intermediateCatchEvent id="await_reply"><bpmn:messageEventDefinition id="be" messageRef="m_reply" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="b4" sourceRef="await_reply" targetRef="send_close" />
    <bpmn:sendTask id="send_close" messageRef="m_close">
      <bpmn:extensionElements><spiffworkflow:messagePayload>{{"po_number": po_number}}</spiffworkflow:messagePayload></bpmn:extensionElements>
    </bpmn:sendTask>
    <bpmn:sequenceFlow id="b5" sourceRef="send_close" targetRef="buyer_end" />
    <bpmn:endEvent id="buyer_end" />
  </bpmn:process>
  <bpmn:process id="seller" isExecutable="true">
    <bpmn:startEvent id="seller_start"><bpmn:messageEventDefinition id="se" messageRef="m_request"><bpmn:extensionElements><spiffworkflow:messageVariable>order</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
    <bpmn:sequenceFlow id="s1" sourceRef="seller_start" targetRef="send_reply" />
    <bpmn:sendTask id="send_reply" messageRef="m_reply">
      <bpmn:extensionElements><spiffworkflow:messagePayload>{{"po_number": order["po_number"]}}</spiffworkflow:messagePayload></bpmn:extensionElements>
    </bpmn:sendTask>
    <bpmn:sequenceFlow id="s2" sourceRef="send_reply" targetRef="await_close" />
    <bpmn:intermediateCatchEvent id="await_close"><bpmn:messageEventDefinition id="sc" messageRef="m_close" /></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="s3" sourceRef="await_close" targetRef="seller_end" />
    <bpmn:endEvent id="seller_end" />
  </bpmn:process>"#,
        retrieval("m_request"),
        retrieval("m_reply"),
        retrieval("m_close"),
    ))
}

/// Started through the API with `{"key": ...}`: throws `{name}` with payload
/// `{"key": key}` (intermediate throw event), then ends.
pub fn thrower(process_id: &str, name: &str) -> String {
    definitions(&format!(
        r#"<bpmn:correlationProperty id="key" name="key">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_{process_id}"><bpmn:formalExpression>key</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_{process_id}" name="{name}" />
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="throw" />
    <bpmn:intermediateThrowEvent id="throw">
      <bpmn:messageEventDefinition id="e1" messageRef="m_{process_id}">
        <bpmn:extensionElements><spiffworkflow:messagePayload>{{"key": key}}</spiffworkflow:messagePayload></bpmn:extensionElements>
      </bpmn:messageEventDefinition>
    </bpmn:intermediateThrowEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="throw" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// Started through the API with `{"key": ...}`: throws `{name}` twice in a row (payloads
/// `{"key": key, "n": 1}` and `{"key": key, "n": 2}`), within one step, then ends.
pub fn double_thrower(process_id: &str, name: &str) -> String {
    definitions(&format!(
        r#"<bpmn:correlationProperty id="key" name="key">
    <bpmn:correlationPropertyRetrievalExpression messageRef="m_{process_id}"><bpmn:formalExpression>key</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  </bpmn:correlationProperty>
  <bpmn:message id="m_{process_id}" name="{name}" />
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="first" />
    <bpmn:intermediateThrowEvent id="first">
      <bpmn:messageEventDefinition id="e1" messageRef="m_{process_id}">
        <bpmn:extensionElements><spiffworkflow:messagePayload>{{"key": key, "n": 1}}</spiffworkflow:messagePayload></bpmn:extensionElements>
      </bpmn:messageEventDefinition>
    </bpmn:intermediateThrowEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="first" targetRef="second" />
    <bpmn:intermediateThrowEvent id="second">
      <bpmn:messageEventDefinition id="e2" messageRef="m_{process_id}">
        <bpmn:extensionElements><spiffworkflow:messagePayload>{{"key": key, "n": 2}}</spiffworkflow:messagePayload></bpmn:extensionElements>
      </bpmn:messageEventDefinition>
    </bpmn:intermediateThrowEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="second" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}

/// start -> timer (PT1H) -> end.
pub fn waits_an_hour() -> String {
    definitions(
        r#"<bpmn:process id="hour" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition><bpmn:timeDuration>"PT1H"</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#,
    )
}

/// Process `fixme`: start -> script `{script}` at `{script_id}` -> user task `check` -> end.
pub fn scripted(script_id: &str, script: &str) -> String {
    definitions(&format!(
        r#"<bpmn:process id="fixme" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="{script_id}" />
    <bpmn:scriptTask id="{script_id}"><bpmn:script>{script}</bpmn:script></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="{script_id}" targetRef="check" />
    <bpmn:userTask id="check" />
    <bpmn:sequenceFlow id="f3" sourceRef="check" targetRef="done" />
    <bpmn:endEvent id="done" />
  </bpmn:process>"#
    ))
}
