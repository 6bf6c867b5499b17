# A JAX training job for round 23 (absl-style log lines), --scenario:
# pallas_headdim: a language model with head_dim 96 trains with XLA's attention; the periodic eval runs the
#   Pallas attention kernel (the fast path of the eval/decode code, written for head_dim 64/128); its blocks are
#   (1, 128, 96): the Pallas GPU lowering refuses the block shape at the first eval (step 100).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import functools
import logging
import time

import jax
import jax.numpy as jnp
from absl import logging as alog
from jax.experimental import pallas as pl

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
alog.use_absl_handler()
alog.set_verbosity(alog.INFO)
logging.root.setLevel(logging.INFO)

V, D, H, DH, L, T, B = 32000, 768, 8, 96, 4, 256, 16
BQ = 128


def init(key):
    ks = jax.random.split(key, 2 + 4 * L)
    p = {"emb": jax.random.normal(ks[0], (V, D)) * 0.02, "head": jax.random.normal(ks[1], (D, V)) * 0.02, "layers": []}
    for i in range(L):
        k = ks[2 + 4 * i: 6 + 4 * i]
        p["layers"].append({"qkv": jax.random.normal(k[0], (D, 3 * H * DH)) * 0.02,
                            "o": jax.random.normal(k[1], (H * DH, D)) * 0.02,
                            "up": jax.random.normal(k[2], (D, 4 * D)) * 0.02,
                            "down": jax.random.normal(k[3], (4 * D, D)) * 0.02})
    return p


def xla_attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(DH)
    s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -1e9)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)


def attn_kernel(q_ref, k_ref, v_ref, o_ref):
    q = q_ref[0]
    k = k_ref[0]
    v = v_ref[0]
    s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32) / jnp.sqrt(DH).astype(jnp.float32)
    qi = pl.program_id(1) * BQ + jax.lax.broadcasted_iota(jnp.int32, (BQ, T), 0)
    ki = jax.lax.broadcasted_iota(jnp.int32, (BQ, T), 1)
    s = jnp.where(ki <= qi, s, -1e9)
    p = jnp.exp(s - jnp.max(s, axis=1, keepdims=True))
    p = p / jnp.sum(p, axis=1, keepdims=True)
    o_ref[0] = jax.lax.dot_general(p.astype(v.dtype), v, (((1,), (0,)), ((), ())),
                                   preferred_element_type=jnp.float32).astype(o_ref.dtype)


def pallas_attention(q, k, v):
    b, h = q.shape[:2]
    q, k, v = (x.reshape(b * h, T, DH) for x in (q, k, v))
    out = pl.pallas_call(
        attn_kernel,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(b * h, T // BQ),
        in_specs=[pl.BlockSpec((1, BQ, DH), lambda i, j: (i, j, 0)),
                  pl.BlockSpec((1, T, DH), lambda i, j: (i, 0, 0)),
                  pl.BlockSpec((1, T, DH), lambda i, j: (i, 0, 0))],
        out_specs=pl.BlockSpec((1, BQ, DH), lambda i, j: (i, j, 0)),
    )(q, k, v)
    return out.reshape(b, h, T, DH)


def forward(p, ids, attn):
    x = p["emb"][ids]
    for lp in p["layers"]:
        qkv = (x @ lp["qkv"]).reshape(x.shape[0], T, 3, H, DH).transpose(2, 0, 3, 1, 4)
        a = attn(qkv[0], qkv[1], qkv[2]).transpose(0, 2, 1, 3).reshape(x.shape[0], T, H * DH)
        x = x + a @ lp["o"]
        x = x + jax.nn.gelu(x @ lp["up"]) @ lp["down"]
    return x @ p["head"]


def loss_fn(p, ids, attn=xla_attention):
    logits = forward(p, ids[:, :-1], attn)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), ids[:, 1:, None], -1))


@jax.jit
def train_step(p, ids):
    loss, g = jax.value_and_grad(loss_fn)(p, ids)
    return jax.tree.map(lambda a, b: a - 1e-3 * b, p, g), loss


@functools.partial(jax.jit, static_argnums=2)
def eval_step(p, ids, use_pallas):
    return loss_fn(p, ids, pallas_attention if use_pallas else xla_attention)


def main():
    alog.info("JAX devices: %s", jax.devices())
    alog.info("model: d_model=%d n_heads=%d head_dim=%d n_layers=%d seq_len=%d; eval attention: pallas", D, H, DH, L, T)
    key = jax.random.PRNGKey(0)
    p = init(key)
    t0 = time.time()
    for step in range(1, 301):
        key, sk = jax.random.split(key)
        ids = jax.random.randint(sk, (B, T + 1), 0, V)
        p, loss = train_step(p, ids)
        if step % 20 == 0:
            alog.info("step %d: loss=%.4f (%.1f steps/s)", step, float(loss), step / (time.time() - t0))
        if step % 100 == 0:
            alog.info("running eval at step %d", step)
            ev = eval_step(p, jax.random.randint(key, (B, T + 1), 0, V), True)
            alog.info("eval loss=%.4f", float(ev))


if __name__ == "__main__":
    main()
