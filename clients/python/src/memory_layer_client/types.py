"""What the API answers, as typed dictionaries (the JSON as it comes, camelCase keys)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

MemoryType = Literal["pattern", "warning", "learning", "context"]
ReviewStatus = Literal["pending", "approved", "rejected"]
Outcome = Literal["succeeded", "failed"]


class Project(TypedDict):
    id: int
    name: str
    slug: str
    description: str
    createdAt: str


class Memory(TypedDict):
    id: int
    projectId: int | None
    scope: str
    type: MemoryType
    content: str
    summary: str
    source: str
    sourceRunId: int | None
    tags: list[str]
    relevanceScore: float
    confidence: float
    active: bool
    expiresAt: str | None
    reviewStatus: ReviewStatus
    approvedBy: str | None
    approvedAt: str | None
    pinned: bool
    tier: str
    tokenCount: int
    accessCount: int
    lastAccessedAt: str | None
    archivedAt: str | None
    mergedInto: int | None
    compressedAt: str | None
    supersededBy: int | None
    supersededAt: str | None
    supersededActor: str
    liveSuccessor: int | None
    staleAt: str | None
    staleRef: str
    createdAt: str
    updatedAt: str


class Superseded(TypedDict):
    done: list[int]
    waiting: list[int]


class CreatedMemory(Memory):
    conflicts: list[Conflict]
    superseded: Superseded


class MemoryPage(TypedDict):
    memories: list[Memory]
    next: str | None


class Event(TypedDict):
    id: int
    memoryId: int
    action: str
    changes: dict[str, list[Any]]
    actor: dict[str, str]
    reason: str
    runId: int | None
    createdAt: str


class EventPage(TypedDict):
    events: list[Event]
    next: str | None


class Conflict(TypedDict):
    id: int
    kind: Literal["conflict", "repeat"]
    memoryIds: list[int]
    status: str
    similarity: float
    evidence: dict[str, Any]
    resolution: str
    outcomeMemoryId: int | None
    resolvedBy: str
    resolvedAt: str | None
    reason: str
    createdAt: str


class ConflictPage(TypedDict):
    conflicts: list[Conflict]
    next: str | None


class Run(TypedDict):
    id: int
    projectId: int
    externalId: str
    taskTitle: str
    writeScope: list[str]
    status: Literal["running", "succeeded", "failed"]
    promptHash: str
    startedAt: str
    finishedAt: str | None
    usedMemoryIds: list[int] | None


class Given(TypedDict):
    memoryId: int
    rank: int
    score: float
    scoreParts: dict[str, float]
    used: bool | None


class RunDetail(Run):
    given: list[Given]


class MovedMemory(TypedDict):
    id: int
    confidence: float
    active: bool


class OutcomeResult(TypedDict):
    run: Run
    recorded: bool
    memories: list[MovedMemory]
    # Given memories flagged for re-review: a success left them as they were.
    paused: NotRequired[list[int]]


class ContextItem(TypedDict):
    id: int
    source: Literal["run", "project", "global"]
    type: str
    rank: int
    detail: str
    tokens: int
    score: float
    scoreParts: dict[str, float]


class Dropped(TypedDict, total=False):
    id: int | None
    source: str
    reason: str
    repeats: int | None
    conflictsWith: int | None


class Warning(TypedDict):
    code: str
    message: str


class ContextMetadata(TypedDict, total=False):
    totalTokens: int
    budget: int
    promptHash: str
    qualityAchieved: float
    coherence: float
    sourceCoverage: dict[str, dict[str, Any]]
    warnings: list[Warning]
    cacheHit: bool
    assemblyTimeMs: float


class PreferenceGiven(TypedDict):
    key: str
    scope: Literal["project", "global"]
    category: str
    tokens: int
    rank: int | None
    reason: Literal["budget", "limit"] | None


class Context(TypedDict):
    text: str
    items: list[ContextItem]
    dropped: list[Dropped]
    preferences: list[PreferenceGiven]
    metadata: ContextMetadata


class Preference(TypedDict):
    id: int
    userId: str
    key: str
    value: Any
    category: str
    scope: Literal["project", "global"]
    status: Literal["pending", "approved", "rejected"]
    updatedBy: str
    updatedAt: str


class Preferences(TypedDict):
    userId: str
    preferences: list[Preference]


class PreferenceEvent(TypedDict):
    key: str
    action: str
    changes: dict[str, Any]
    actor: str
    at: str


class Erased(TypedDict):
    userId: str
    preferences: int
    conversations: int
    messages: int


class Changes(TypedDict):
    ref: str
    marked: int
    memoryIds: list[int]


# --- conversations (what agents and users said, kept for the project's retention) -------------

Role = Literal["user", "assistant", "system", "tool"]


class ConversationMessage(TypedDict):
    position: int
    role: Role
    content: str
    sentAt: str


class Conversation(TypedDict):
    id: int
    projectId: int
    userId: str
    agentId: str
    title: str
    createdAt: str
    lastMessageAt: str
    messageCount: int


class ConversationDetail(Conversation):
    messages: list[ConversationMessage]
    # More messages follow: pass it as ``after`` for them.
    nextAfter: int | None


class MessagesAppended(TypedDict):
    conversation: Conversation
    messages: list[ConversationMessage]


class ConversationMatch(ConversationMessage):
    score: float
    words: float
    meaning: float


class ConversationFound(Conversation):
    # With a search query: the conversation's best message's score, and its best matches.
    score: NotRequired[float]
    matches: NotRequired[list[ConversationMatch]]


class ConversationPage(TypedDict):
    conversations: list[ConversationFound]
    next: str | None


class Distilled(TypedDict):
    memories: list[Memory]
    known: list[str]


# What each MCP tool answers as structured content (its output schema, memory_layer_client.tools).
class Recalled(Context):
    ids: list[int]
    runId: int | None


class MemoriesFound(TypedDict):
    memories: list[Memory]
    nextCursor: str | None


class ConflictsFound(TypedDict):
    conflicts: list[Conflict]
    nextCursor: str | None


class History(TypedDict):
    events: list[Event]
    nextCursor: str | None


class ConversationsFound(TypedDict):
    conversations: list[ConversationFound]
    nextCursor: str | None


# --- entities (the names memories mention, and their graph) ---------------------------------


class Entity(TypedDict):
    id: int
    name: str
    kind: Literal["code", "module", "path", "package", "term"]


class EntityPage(TypedDict):
    entities: list[Entity]
    next: str | None


class EntityMemory(TypedDict):
    id: int
    type: MemoryType
    content: str


class Neighbour(Entity):
    weight: int
    type: Literal["defined_in", "imports", "mentions"]
    source: Literal["mentions", "reviewer"]
    depth: int
    via: int


class EntityDetail(Entity):
    memories: list[EntityMemory]
    neighbours: list[Neighbour]


class Related(TypedDict):
    """What the MCP tool ``related`` answers: the entities asked for (one by name, or those
    a memory mentions), each with its memories and its neighbours."""

    entities: list[EntityDetail]
