print("Loading tokenizer cache into memory", flush=True)
blocks = []
while True:
    blocks.append(bytearray(512 * 1024 * 1024))
