import pytest

from tests.conftest import text_of

pytestmark = pytest.mark.anyio


async def test_server_lists_the_seven_session_tools(client):
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert {
        "read_shared_context",
        "append_shared_note",
        "write_shared_handoff",
        "get_latest_handoff",
        "list_sessions",
        "choose_session",
        "resume_session",
    } <= names


async def test_a_note_written_through_mcp_reads_back(client):
    written = await client.call_tool("append_shared_note", {"agent": "claude", "text": "hello", "session_id": "s"})
    assert not written.is_error
    read = await client.call_tool("read_shared_context", {"session_id": "s"})
    assert "> hello" in text_of(read)
