"""The LangChain and LlamaIndex retrievers of sluice-client against the local stack: the planted chunk first
with its metadata, filters narrow, and a collection out of the caller's reach raises instead of answering."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.client_support import PLANTED, QUESTION, planted_base, sluice_client, user

pytestmark = pytest.mark.e2e
SOURDOUGH = "How often should the sourdough starter be fed?"
Sluice, AsyncSluice, NotFound = sluice_client.Sluice, sluice_client.AsyncSluice, sluice_client.NotFound


@pytest.fixture(scope="module")
def planted(runtime, make_token):
    name = user("rhea")
    with Sluice(runtime.api_url, token=make_token(name)) as sluice:
        kb, docs = planted_base(sluice)
    client = Sluice(runtime.api_url, token=make_token(name))
    # An AsyncSluice belongs to the event loop it first ran on: each test makes its own.
    yield kb, docs, client, lambda: AsyncSluice(runtime.api_url, token=make_token(name))
    client.close()


@pytest.fixture(scope="module")
def stranger(runtime, make_token):
    with Sluice(runtime.api_url, token=make_token(user("mallory"))) as client:
        yield client


def _assert_planted_metadata(metadata: dict, kb, contract) -> None:
    assert metadata["document_id"] == contract.id and metadata["filename"] == "contract.pdf"
    assert metadata["collection"] == kb.collection_name and metadata["kb_id"] == kb.id
    assert (metadata["page_start"], metadata["page_end"]) == (1, 2)  # the two short pages are one chunk
    assert metadata["metadata"]["organizational_unit"] == "legal"
    assert metadata["metadata"]["document_type"] == "contract"
    assert 0 < metadata["score"] <= 1 and 0 < metadata["vec_score"] <= 1


# --- LangChain --------------------------------------------------------------------------------

langchain = pytest.importorskip("sluice_client.langchain", reason="langchain-core is not installed "
                                "(pip install 'sluice-client[langchain]'; make install does)")


def test_langchain_returns_the_planted_chunk_first_with_its_metadata(planted):
    kb, docs, client, _ = planted
    retriever = langchain.SluiceRetriever(client=client, collections=[kb.collection_name], top_k=3)
    found = retriever.invoke(QUESTION)
    assert 1 <= len(found) <= 3
    assert "two percent of the Contract Price" in found[0].page_content
    assert found[0].page_content in PLANTED or PLANTED[:60] in found[0].page_content
    _assert_planted_metadata(found[0].metadata, kb, docs[0])


def test_langchain_filters_narrow_and_async_answers_the_same(planted):
    kb, docs, client, async_client = planted
    everything = langchain.SluiceRetriever(client=client, collections=[kb.collection_name], top_k=5)
    assert everything.invoke(SOURDOUGH)[0].metadata["filename"] == "sourdough.txt"
    kitchen = everything.model_copy(update={"filters": {"organizational_unit": ["kitchen"]}})
    assert docs[0].id not in {d.metadata["document_id"] for d in kitchen.invoke(QUESTION)}
    found = kitchen.invoke(SOURDOUGH)
    assert found[0].metadata["filename"] == "sourdough.txt"
    assert {d.metadata["metadata"]["organizational_unit"] for d in found} == {"kitchen"}
    legal_only = everything.model_copy(update={"filters": {"organizational_unit": ["legal"]}})
    assert "sourdough.txt" not in {d.metadata["filename"] for d in legal_only.invoke(SOURDOUGH)}

    async def legal() -> list:
        async with async_client() as aclient:
            return await langchain.SluiceRetriever(async_client=aclient, collections=[kb.collection_name], top_k=5,
                                                   filters={"organizational_unit": ["legal"]}).ainvoke(QUESTION)

    found = asyncio.run(legal())
    assert found and {d.metadata["document_id"] for d in found} == {docs[0].id}


def test_langchain_out_of_reach_collection_raises_not_found(planted, stranger):
    kb, *_ = planted
    retriever = langchain.SluiceRetriever(client=stranger, collections=[kb.collection_name])
    with pytest.raises(NotFound, match="^Collection not found$"):
        retriever.invoke(QUESTION)


# --- LlamaIndex -------------------------------------------------------------------------------

def _llamaindex():
    return pytest.importorskip("sluice_client.llamaindex", reason="llama-index-core is not installed "
                               "(pip install 'sluice-client[llamaindex]'; make install does)")


def test_llamaindex_returns_the_planted_node_first_with_its_score_and_metadata(planted):
    llamaindex = _llamaindex()
    kb, docs, client, _ = planted
    retriever = llamaindex.SluiceRetriever(client, collections=[kb.collection_name], top_k=3)
    found = retriever.retrieve(QUESTION)
    assert 1 <= len(found) <= 3
    assert "two percent of the Contract Price" in found[0].node.get_content()
    assert found[0].score == found[0].node.metadata["score"]
    assert [n.score for n in found] == sorted((n.score for n in found), reverse=True)
    _assert_planted_metadata(found[0].node.metadata, kb, docs[0])


def test_llamaindex_filters_narrow_and_async_answers_the_same(planted):
    llamaindex = _llamaindex()
    kb, docs, client, async_client = planted
    kitchen = llamaindex.SluiceRetriever(client, collections=[kb.collection_name], top_k=5,
                                         filters={"organizational_unit": ["kitchen"]})
    assert docs[0].id not in {n.node.metadata["document_id"] for n in kitchen.retrieve(QUESTION)}
    found = kitchen.retrieve(SOURDOUGH)
    assert found[0].node.metadata["filename"] == "sourdough.txt"
    assert {n.node.metadata["metadata"]["organizational_unit"] for n in found} == {"kitchen"}

    async def legal() -> list:
        async with async_client() as aclient:
            return await llamaindex.SluiceRetriever(async_client=aclient, collections=[kb.collection_name],
                                                    filters={"organizational_unit": ["legal"]}).aretrieve(QUESTION)

    found = asyncio.run(legal())
    assert found and {n.node.metadata["document_id"] for n in found} == {docs[0].id}


def test_llamaindex_out_of_reach_collection_raises_not_found(planted, stranger):
    llamaindex = _llamaindex()
    kb, *_ = planted
    with pytest.raises(NotFound, match="^Collection not found$"):
        llamaindex.SluiceRetriever(stranger, collections=[kb.collection_name]).retrieve(QUESTION)
