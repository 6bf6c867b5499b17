# JAX jobs (round 14), --scenario:
# donated: a jitted train step donates the params buffer; the EMA update that starts at step 200 still
#   reads the params of the previous step (deleted array);
# cudnn_attn: a ViT-style encoder whose attention is pinned to the cuDNN fused kernel with head_dim 320.
import argparse
import time

import jax
import jax.numpy as jnp

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
print(f"JAX {jax.__version__}, devices: {jax.devices()}", flush=True)


def init(key, d_in=512, d=1024, classes=16):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (d_in, d)) * 0.02, "w2": jax.random.normal(k2, (d, classes)) * 0.02}


def loss_fn(p, x, y):
    logits = jax.nn.gelu(x @ p["w1"]) @ p["w2"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


if args.scenario == "donated":
    key = jax.random.PRNGKey(0)
    params = init(key)
    x = jax.random.normal(key, (8192, 512))
    y = jnp.argmax(x[:, :16], axis=1)

    def step(p, x, y):
        l, g = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g), l

    train_step = jax.jit(step, donate_argnums=(0,))
    ema_update = jax.jit(lambda e, p: jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b, e, p))
    ema = None
    prev = params
    t0 = time.perf_counter()
    for s in range(1, 1001):
        params, l = train_step(params, x, y)
        if s >= 200:  # EMA of the weights from step 200 on
            if ema is None:
                ema = jax.tree_util.tree_map(jnp.copy, prev)
                print(f"step {s}: starting EMA (decay 0.999)", flush=True)
            ema = ema_update(ema, prev)
        prev = params
        if s % 50 == 0:
            l.block_until_ready()
            print(f"step {s:4d} | loss {float(l):.4f} | {50 * x.shape[0] / (time.perf_counter() - t0):,.0f} examples/s", flush=True)
            t0 = time.perf_counter()

elif args.scenario == "cudnn_attn":
    B, T, H, D = 8, 1024, 8, 320  # ViT-H/14-style: width 2560, 8 heads

    def attention_block(p, x):
        q = (x @ p["wq"]).reshape(B, T, H, D)
        k = (x @ p["wk"]).reshape(B, T, H, D)
        v = (x @ p["wv"]).reshape(B, T, H, D)
        a = jax.nn.dot_product_attention(q, k, v, implementation="cudnn")
        return x + a.reshape(B, T, H * D) @ p["wo"]

    key = jax.random.PRNGKey(0)
    ks = jax.random.split(key, 5)
    p = {n: (jax.random.normal(k, (H * D, H * D)) * 0.02).astype(jnp.bfloat16) for n, k in zip(["wq", "wk", "wv", "wo"], ks)}
    x = jax.random.normal(ks[4], (B, T, H * D)).astype(jnp.bfloat16)
    print(f"encoder block: width {H * D}, heads {H}, head_dim {D}, tokens {T}, attention=cudnn", flush=True)
    out = jax.jit(attention_block)(p, x)
    print(float(out.astype(jnp.float32).mean()), flush=True)
