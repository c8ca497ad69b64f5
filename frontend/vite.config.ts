import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    // dist/.gitkeep is tracked so that go:embed always finds the directory.
    emptyOutDir: false,
    sourcemap: false,
  },
  test: {
    environment: "jsdom",
    globals: true,
  },
});
