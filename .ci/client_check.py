"""Proves openapi/openapi.json is usable: a Python client generated from it (by
openapi-python-client, see .ci/run) uploads a model, sends a message that starts an instance,
and reads the instance and the message back, all through typed models.

    python client_check.py URL TOKEN
"""

import sys
import uuid

from workflow_backend_client import AuthenticatedClient
from workflow_backend_client.api.messages import list_messages, send_message
from workflow_backend_client.api.process_instances import show_instance
from workflow_backend_client.api.process_models import show_model
from workflow_backend_client.models import (
    InstanceAnswer,
    InstanceStatus,
    ModelDetailAnswer,
    ProcessInstanceDetail,
    SendMessageBody,
)

URL, TOKEN = sys.argv[1], sys.argv[2]
SUFFIX = uuid.uuid4().hex[:8]
MODEL = f"client-check/orders-{SUFFIX}"
MESSAGE = f"order received {SUFFIX}"
BPMN = f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="defs">
  <bpmn:message id="m_received" name="{MESSAGE}"/>
  <bpmn:process id="client_check_{SUFFIX}" isExecutable="true">
    <bpmn:startEvent id="received"><bpmn:messageEventDefinition messageRef="m_received"/></bpmn:startEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="received" targetRef="done"/>
    <bpmn:endEvent id="done"/>
  </bpmn:process>
</bpmn:definitions>
"""


def check(condition, what):
    if not condition:
        sys.exit(f"client check failed: {what}")


client = AuthenticatedClient(base_url=URL, token=TOKEN)
# uploads are XML, which the generator leaves out: the client's own HTTP session sends it
upload = client.get_httpx_client().put(
    f"/v1.0/process-models/{MODEL.replace('/', ':')}/files/orders.bpmn",
    content=BPMN.encode(),
    headers={"Content-Type": "application/xml"},
)
check(upload.status_code == 201, f"upload answered {upload.status_code}: {upload.text}")

model = show_model.sync(MODEL.replace("/", ":"), client=client)
check(isinstance(model, ModelDetailAnswer), f"show_model: {model!r}")
check(model.files[0].name == "orders.bpmn", f"files: {model.files}")

body = SendMessageBody.from_dict({"order_id": SUFFIX})
started = send_message.sync(MESSAGE, client=client, body=body)
check(isinstance(started, InstanceAnswer), f"send_message: {started!r}")
check(started.process_instance.status == InstanceStatus.COMPLETE, f"status {started.process_instance.status}")

instance = show_instance.sync(MODEL.replace("/", ":"), started.process_instance.id, client=client)
check(isinstance(instance, ProcessInstanceDetail), f"show_instance: {instance!r}")
check(instance.tasks and instance.tasks[-1].element_id == "done", f"tasks: {instance.tasks}")

sent = list_messages.sync(client=client, name=MESSAGE)
check(sent.pagination.total == 1 and sent.results[0].status.value == "completed", f"messages: {sent!r}")
print(f"client check: generated client started instance {instance.id} and read it back")
