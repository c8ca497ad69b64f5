import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vitest/config";
import react from "@vitejs/plugin-react";

// dist/ is embedded into the Go binary whole, so a build must not leave the
// previous build's hashed files behind. It cannot simply empty dist/,
// because dist/.gitkeep is tracked so that go:embed always finds the
// directory.
function cleanAssets(): Plugin {
  return {
    name: "sluice-clean-assets",
    apply: "build",
    buildStart() {
      rmSync(fileURLToPath(new URL("dist/assets", import.meta.url)), { recursive: true, force: true });
    },
  };
}

export default defineConfig({
  plugins: [react(), cleanAssets()],
  build: {
    outDir: "dist",
    emptyOutDir: false,
    sourcemap: false,
  },
  test: {
    environment: "jsdom",
    globals: true,
    // Hang guards, not expectations: every test waits for conditions, and
    // a loaded 2-core machine can take seconds to render a card cold.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    setupFiles: ["src/testSetup.ts"],
    // diff2html's ES modules are plain .js in a package without
    // "type": "module", which Node will not load; tests use the same
    // code's CommonJS build.
    alias: [{ find: /^diff2html\/lib-esm\/(.*)$/, replacement: "diff2html/lib/$1" }],
  },
});
