// What the page needs of the official AG-UI client; esbuild bundles it into agui-client.js.
export { HttpAgent } from "@ag-ui/client";
