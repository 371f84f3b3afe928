"""A shipped catalog of popular open models: the config.json facts a memory estimate needs.

Every row names where its values were read (`source`). The parameter count is not copied from a model card: it is
computed from the shapes (`ModelSpec.params`, the standard dense / mixture-of-experts decoder and BERT encoder
layouts), and tests/dra/sizing check it against the figures the model cards publish. Models whose shapes could not be
confirmed from a public copy of their config.json or card (nomic-embed-text, bge-small/base, e5-large, bge-m3, Phi-3.5,
Mistral-Nemo, ...) are left out: an unknown model gets no estimate, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MODELS", "ModelSpec", "lookup_model"]

_GENZ = "https://github.com/abhibambhaniya/GenZ-LLM-Analyzer/blob/main/GenZ/Models/Model_sets/"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """The architecture facts of one model (from its Hugging Face config.json), and where they were read."""

    hf_id: str
    kind: str  # "decoder" (causal LM with a KV cache) or "encoder" (BERT-style embedding model, no KV cache)
    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads (= heads without grouped-query attention)
    head_dim: int  # head_dim (hidden / heads unless the config says otherwise)
    intermediate: int  # intermediate_size (per expert for mixture-of-experts)
    vocab: int  # vocab_size
    max_position: int  # max_position_embeddings: vLLM's default --max-model-len
    dtype: str  # torch_dtype: what `--dtype auto` loads
    tied: bool = False  # tie_word_embeddings
    experts: int = 1  # num_local_experts (1: dense)
    source: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def embedding_params(self) -> int:
        """Parameters of the token embedding and (untied) output head: quantization methods keep these 16-bit."""
        if self.kind == "encoder":
            return (self.vocab + self.max_position + 2) * self.hidden
        return self.vocab * self.hidden * (1 if self.tied else 2)

    @property
    def params(self) -> int:
        """Parameter count from the shapes (biases and norms of decoders left out: well under 0.1 %)."""
        h, i = self.hidden, self.intermediate
        if self.kind == "encoder":
            # BERT: Q, K, V, O with biases; two FFN matrices with biases; two LayerNorms per layer; a pooler.
            per_layer = 4 * (h * h + h) + 2 * h * i + i + h + 4 * h
            return self.embedding_params + 2 * h + self.layers * per_layer + h * h + h
        attention = h * self.heads * self.head_dim * 2 + h * self.kv_heads * self.head_dim * 2
        mlp = 3 * h * i * self.experts + (h * self.experts if self.experts > 1 else 0)  # gated MLP (+ router)
        return self.embedding_params + self.layers * (attention + mlp)

    def kv_bytes_per_token(self, kv_bytes: float) -> float:
        """KV cache per token, all layers: 2 (K and V) x layers x kv_heads x head_dim x bytes per element."""
        if self.kind == "encoder":
            return 0.0
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_bytes


def _llm(
    hf_id: str,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    intermediate: int,
    vocab: int,
    max_position: int,
    source: str,
    *,
    head_dim: int = 0,
    dtype: str = "bfloat16",
    tied: bool = False,
    experts: int = 1,
    aliases: tuple[str, ...] = (),
) -> ModelSpec:
    return ModelSpec(
        hf_id,
        "decoder",
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim or hidden // heads,
        intermediate,
        vocab,
        max_position,
        dtype,
        tied,
        experts,
        source,
        aliases,
    )


def _bert(
    hf_id: str, layers: int, hidden: int, heads: int, intermediate: int, source: str, aliases: tuple[str, ...] = ()
) -> ModelSpec:
    # BERT uncased WordPiece vocabulary (30522) and 512 absolute positions, as in every model below.
    return ModelSpec(
        hf_id, "encoder", layers, hidden, heads, heads, hidden // heads, intermediate, 30522, 512, "float32",
        source=source, aliases=aliases,
    )  # fmt: skip


_META = _GENZ + "meta.py (meta-llama/<id>/blob/main/config.json)"
_QWEN = _GENZ + "alibaba.py (Qwen/<id>/blob/main/config.json)"
_QWEN_05 = "Qwen/Qwen2.5-0.5B config.json as quoted in public model notes (max_position_embeddings 32768, tied)"
_R1 = (
    "DeepSeek-R1 distills keep their base model's architecture (Qwen2.5-Math-7B, Qwen2.5-14B, Qwen2.5-32B, "
    "Llama-3.1-8B: github.com/deepseek-ai/DeepSeek-R1); context 131072 per xorbitsai/inference "
    "doc/source/models/builtin/llm/deepseek-r1-distill-*.rst"
)

MODELS: tuple[ModelSpec, ...] = (
    # Meta Llama 3.x (Llama 3.2 ties its embeddings: the computed 1.24B / 3.21B match the cards).
    _llm("meta-llama/Llama-3.2-1B", 16, 2048, 32, 8, 8192, 128256, 131072, _META, tied=True,
         aliases=("meta-llama/Llama-3.2-1B-Instruct",)),
    _llm("meta-llama/Llama-3.2-3B", 28, 3072, 24, 8, 8192, 128256, 131072, _META, tied=True,
         aliases=("meta-llama/Llama-3.2-3B-Instruct",)),
    _llm("meta-llama/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256, 131072, _META,
         aliases=("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B",
                  "meta-llama/Meta-Llama-3.1-8B-Instruct")),
    _llm("meta-llama/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256, 131072, _META,
         aliases=("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B",
                  "meta-llama/Meta-Llama-3.1-70B-Instruct")),
    # Mistral AI
    _llm("mistralai/Mistral-7B-Instruct-v0.2", 32, 4096, 32, 8, 14336, 32000, 32768,
         _GENZ + "mistral.py (mistralai/Mistral-7B-Instruct-v0.2/blob/main/config.json)"),
    _llm("mistralai/Ministral-8B-Instruct-2410", 36, 4096, 32, 8, 12288, 131072, 32768,
         _GENZ + "mistral.py (mistralai/Ministral-8B-Instruct-2410/blob/main/config.json)"),
    _llm("mistralai/Mixtral-8x7B-Instruct-v0.1", 32, 4096, 32, 8, 14336, 32000, 32768,
         _GENZ + "mistral.py (mistralai/Mixtral-8x7B-Instruct-v0.1/blob/main/config.json)", experts=8,
         aliases=("mistralai/Mixtral-8x7B-v0.1",)),
    _llm("mistralai/Mixtral-8x22B-Instruct-v0.1", 56, 6144, 48, 8, 16384, 32768, 65536,
         _GENZ + "mistral.py (mistralai/Mixtral-8x22B-Instruct-v0.1/blob/main/config.json)", experts=8,
         aliases=("mistralai/Mixtral-8x22B-v0.1",)),
    # Qwen2.5 (0.5B-3B tie their embeddings: the computed 0.49B / 1.54B / 3.09B match the cards).
    _llm("Qwen/Qwen2.5-0.5B-Instruct", 24, 896, 14, 2, 4864, 151936, 32768, _QWEN_05, tied=True,
         aliases=("Qwen/Qwen2.5-0.5B",)),
    _llm("Qwen/Qwen2.5-1.5B-Instruct", 28, 1536, 12, 2, 8960, 151936, 32768, _QWEN, tied=True,
         aliases=("Qwen/Qwen2.5-1.5B",)),
    _llm("Qwen/Qwen2.5-3B-Instruct", 36, 2048, 16, 2, 11008, 151936, 32768, _QWEN, tied=True,
         aliases=("Qwen/Qwen2.5-3B",)),
    _llm("Qwen/Qwen2.5-7B-Instruct", 28, 3584, 28, 4, 18944, 152064, 32768, _QWEN, aliases=("Qwen/Qwen2.5-7B",)),
    _llm("Qwen/Qwen2.5-14B-Instruct", 48, 5120, 40, 8, 13824, 152064, 32768, _QWEN, aliases=("Qwen/Qwen2.5-14B",)),
    _llm("Qwen/Qwen2.5-32B-Instruct", 64, 5120, 40, 8, 27648, 152064, 32768, _QWEN, aliases=("Qwen/Qwen2.5-32B",)),
    _llm("Qwen/Qwen2.5-72B-Instruct", 80, 8192, 64, 8, 29568, 152064, 32768, _QWEN, aliases=("Qwen/Qwen2.5-72B",)),
    # Google Gemma 2 (head_dim 256 / 256 / 128, tied embeddings)
    _llm("google/gemma-2-2b-it", 26, 2304, 8, 4, 9216, 256000, 8192,
         _GENZ + "google.py (google/gemma-2-2b/blob/main/config.json)", head_dim=256, tied=True,
         aliases=("google/gemma-2-2b",)),
    _llm("google/gemma-2-9b-it", 42, 3584, 16, 8, 14336, 256000, 8192,
         _GENZ + "google.py (google/gemma-2-9b/blob/main/config.json)", head_dim=256, tied=True,
         aliases=("google/gemma-2-9b",)),
    _llm("google/gemma-2-27b-it", 46, 4608, 32, 16, 36864, 256000, 8192,
         _GENZ + "google.py (google/gemma-2-27b-it/blob/main/config.json)", head_dim=128, tied=True,
         aliases=("google/gemma-2-27b",)),
    # Microsoft Phi-3 (Phi-3-mini has no grouped-query attention: 32 KV heads)
    _llm("microsoft/Phi-3-mini-128k-instruct", 32, 3072, 32, 32, 8192, 32064, 131072,
         _GENZ + "microsoft.py (microsoft/Phi-3-mini-128k-instruct/blob/main/config.json)"),
    _llm("microsoft/Phi-3-medium-4k-instruct", 40, 5120, 40, 10, 17920, 32064, 4096,
         _GENZ + "microsoft.py (microsoft/Phi-3-medium-4k-instruct/blob/main/config.json)"),
    # DeepSeek-R1 distills
    _llm("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", 28, 3584, 28, 4, 18944, 152064, 131072, _R1),
    _llm("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", 48, 5120, 40, 8, 13824, 152064, 131072, _R1),
    _llm("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 64, 5120, 40, 8, 27648, 152064, 131072, _R1),
    _llm("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 32, 4096, 32, 8, 14336, 128256, 131072, _R1),
    # Embedding models for TEI (BERT encoders)
    _bert("sentence-transformers/all-MiniLM-L6-v2", 6, 384, 12, 1536,
          "ollama library all-minilm:l6-v2 GGUF metadata (bert.block_count 6, embedding_length 384, head_count 12, "
          "feed_forward_length 1536, context_length 512); 22.7M parameters per its card",
          aliases=("all-MiniLM-L6-v2",)),
    _bert("BAAI/bge-large-en-v1.5", 24, 1024, 16, 4096,
          "tenstorrent tt-metal models/demos/bge_large_en README (hidden 1024, 24 layers, 16 heads, intermediate "
          "4096, max sequence 512)"),
    _bert("intfloat/e5-base-v2", 12, 768, 12, 3072,
          "BERT-base (12 layers, 768, max_position_embeddings 512) per a public ContextualModel constants file "
          "quoting intfloat/e5-base-v2's config.json; BERT-base has 12 heads and a 3072 FFN"),
)  # fmt: skip

_INDEX: dict[str, ModelSpec] = {}
for _spec in MODELS:
    for _name in (_spec.hf_id, *_spec.aliases):
        _INDEX[_name.lower()] = _spec


# A model's name without its organisation (`llama-3.1-8b-instruct`), where only one catalog model has it: NVIDIA's
# per-model NIM images are named so (nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.3, build.nvidia.com's catalog).
_BY_BASENAME: dict[str, ModelSpec | None] = {}
for _spec in MODELS:
    for _name in (_spec.hf_id, *_spec.aliases):
        _base = _name.rsplit("/", 1)[-1].lower()
        _BY_BASENAME[_base] = _spec if _BY_BASENAME.get(_base, _spec) is _spec else None


def model_from_nim_image(image: str) -> ModelSpec | None:
    """The catalog model a per-model NIM image serves (`nvcr.io/nim/<publisher>/<model>:<tag>`), or None (a
    multi-model `llm-nim` image, another registry, or a model not in the catalog)."""
    path = image.strip().lower().split("@", 1)[0]  # a digest names no model
    if not path.startswith("nvcr.io/nim/"):
        return None
    name = path.rsplit("/", 1)[-1].split(":", 1)[0]  # the repository's last part, without its tag
    return _BY_BASENAME.get(name)


def lookup_model(name: str) -> ModelSpec | None:
    """The catalog row of a Hugging Face model id (case-insensitive, aliases included; a trailing `/`, an `hf://`
    prefix or a local `/models/<org>/<name>` path keeps its last two parts), or None when it is not in the catalog."""
    key = name.strip().strip("/")
    for prefix in ("hf://", "https://huggingface.co/"):
        if key.lower().startswith(prefix):
            key = key[len(prefix) :]
    found = _INDEX.get(key.lower())
    if found is None and key.count("/") > 1:
        found = _INDEX.get("/".join(key.split("/")[-2:]).lower())
    return found
