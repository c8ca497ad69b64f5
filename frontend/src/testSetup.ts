// Runs before every test file. testing-library's waitFor and findBy* give
// up after one second by default; that is a hang guard, and on a loaded
// machine a cold render can take longer, so the guard is wider here.
// Nothing waits longer than its condition needs.
import { configure } from "@testing-library/react";

configure({ asyncUtilTimeout: 10_000 });
